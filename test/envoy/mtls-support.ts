import { eventually } from '../support/traffic.js';

/** Puts Mesh `default` with `mtls` and waits until it has a CA. */
export async function enableMtls(api: string, mtls: object): Promise<void> {
  const answer = await fetch(`http://${api}/meshes/default`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls }),
  });
  if (!answer.ok) throw new Error(`PUT /meshes/default answered ${answer.status}: ${await answer.text()}`);
  await eventually('the mesh’s first CA', async () => ((await (await fetch(`http://${api}/meshes/default/ca`)).json()) as { items: unknown[] }).items.length > 0);
}
