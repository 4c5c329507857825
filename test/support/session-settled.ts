import type { Harness } from './harness.js';
import { eventually } from './traffic.js';

/**
 * Waits until the node's session serves the store's current revision (or a later one) and the
 * node has ACKed every type's latest response: what a test checks traffic after a write.
 */
export async function settled(harness: Harness, node: string): Promise<void> {
  const revision = harness.cp.store.projection.revision;
  await eventually(
    `${node} ACKing revision ${revision}`,
    () => {
      const view = harness.cp.session(node);
      if (view === undefined || (view.revision ?? 0) < revision) return false;
      return Object.values(view.types).every((type) => type.sent === undefined || type.acked?.nonce === type.sent.nonce);
    },
    { attempts: 1_000, every: 10 },
  );
}
