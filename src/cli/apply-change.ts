import type { ChangeAnswer } from '../api/index.js';
import { describeKey } from '../store/index.js';
import type { ApiClient } from './api-client.js';
import { runChange, waitIfAsked, type ChangeFlags } from './change-flags.js';
import type { CliIo } from './cli-io.js';
import type { ManifestEntry } from './read-manifests.js';
import { printWarnings } from './write-outcome.js';

/**
 * `chancery apply` with `--dry-run`, `--fail-on-warnings` or `--wait`: the files as one change
 * (`POST /changes`, written all or nothing as one batch of the log), previewed, checked, or
 * followed until every node it changed ACKed it.
 */
export async function applyAsChange(entries: readonly ManifestEntry[], flags: ChangeFlags, client: ApiClient, io: CliIo): Promise<number> {
  // A Dataplane without a mesh goes to `default`, as the one-by-one apply puts it there.
  const body = { items: entries.map(({ key, resource }) => (key.type === 'Mesh' ? resource : { ...resource, mesh: key.mesh })) };
  const { code, written } = await runChange({ method: 'POST', path: '/changes', body }, flags, client, io);
  if (written === undefined) return code;
  const answer = written.body as ChangeAnswer;
  for (const { type, mesh, name, outcome } of answer.items) io.stdout.write(`${describeKey({ type, mesh, name })} ${outcome}\n`);
  printWarnings(answer.warnings.map((warning) => warning.message), io.stderr);
  return waitIfAsked(flags, written, client, io, code);
}
