/** Epoch ms as the API shows a time: ISO 8601, UTC. */
export function isoTime(at: number): string {
  return new Date(at).toISOString();
}
