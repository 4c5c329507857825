import { describeKey } from '../store/index.js';
import type { ApiClient } from './api-client.js';
import type { CliIo } from './cli-io.js';
import type { ManifestEntry } from './read-manifests.js';
import { resourcePath } from './resource-paths.js';

/**
 * After a policy is applied: a warning on stderr when its targetRef selects no dataplane of its
 * mesh (a typo in a service name or a tag is the usual cause), so that it does not sit there
 * configuring nothing unnoticed. Written, not refused: the dataplanes may come later.
 */
export async function warnIfUnmatched(client: ApiClient, entry: ManifestEntry, io: CliIo): Promise<void> {
  const { body } = await client.request('GET', `${resourcePath(entry.key)}/_resources/dataplanes`);
  if ((body as { total: number }).total > 0) return;
  io.stderr.write(`Warning: ${describeKey(entry.key)} selects no dataplane of mesh ${entry.key.mesh}: it configures nothing until one matches its targetRef\n`);
}
