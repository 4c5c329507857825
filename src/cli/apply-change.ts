import type { ApiClient } from './api-client.js';
import { printPreview, readPreview, type ChangeFlags } from './change-flags.js';
import type { CliIo } from './cli-io.js';
import { UsageError } from './errors.js';

/**
 * `chancery apply --dry-run`: the file previewed as the one change `POST /apply` would write.
 * A file of more batches than one is refused: each batch would be previewed against the store
 * as it is, not as the batches before it would leave it.
 */
export async function previewApply(bodies: readonly { readonly items: readonly unknown[] }[], flags: ChangeFlags, client: ApiClient, io: CliIo): Promise<number> {
  const [body] = bodies;
  if (body === undefined || bodies.length > 1) throw new UsageError(`--dry-run previews one apply: this file is ${bodies.length} batches; preview its parts one by one`);
  return printPreview(await readPreview(client, { method: 'POST', path: '/apply', body }, flags), flags, io);
}
