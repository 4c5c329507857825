import { hash } from 'node:crypto';

/**
 * A content hash, used as a version string. Every instance computes the same hash for the
 * same bytes, so a node moving between instances is not re-sent what it holds (I6). The parts
 * are hashed as one run of bytes, in one call: a hash object made per call cost more than
 * hashing (a node's first resources are hashed four times).
 */
export function contentHash(...parts: ReadonlyArray<string | Uint8Array>): string {
  const bytes = parts.every((part) => typeof part === 'string') ? parts.join('') : Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
  return hash('sha256', bytes, 'base64url').slice(0, 16);
}
