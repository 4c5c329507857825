/** A resource as the HTTP API takes it: enough to name where it goes. */
interface Named {
  readonly mesh: string;
  readonly name: string;
}

/** Writes a Dataplane through the HTTP API at `api` (`host:port`), failing with the API's answer if it is refused. */
export async function putDataplane(api: string, dataplane: Named): Promise<void> {
  const response = await fetch(`http://${api}/meshes/${dataplane.mesh}/dataplanes/${dataplane.name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(dataplane),
  });
  if (!response.ok) throw new Error(`PUT Dataplane ${dataplane.name} answered ${response.status}: ${await response.text()}`);
}

/** Deletes a Dataplane of mesh `default` through the HTTP API, failing with the API's answer if it is refused. */
export async function deleteDataplane(api: string, name: string): Promise<void> {
  const response = await fetch(`http://${api}/meshes/default/dataplanes/${name}`, { method: 'DELETE' });
  if (!response.ok) throw new Error(`DELETE Dataplane ${name} answered ${response.status}: ${await response.text()}`);
}
