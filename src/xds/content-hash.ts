import { createHash } from 'node:crypto';

/**
 * A content hash, used as a version string. Every instance computes the same hash for the
 * same bytes, so a node moving between instances is not re-sent what it holds (I6).
 */
export function contentHash(...parts: ReadonlyArray<string | Uint8Array>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('base64url').slice(0, 16);
}
