import type { RolloutAnswer } from '../changes/index.js';
import type { ApiClient } from './api-client.js';
import type { CliIo } from './cli-io.js';
import { EXIT } from './report-error.js';
import { rolloutText } from './rollout-output.js';

/** ms between two looks at a rollout while waiting. */
const POLL_MS = 250;

/** The path of a revision's rollout across the fleet. */
export function rolloutPath(revision: number, since: number | undefined): string {
  return `/revisions/${revision}?scope=fleet${since === undefined ? '' : `&since=${since}`}`;
}

/**
 * `--wait`: follows the rollout of the revisions a write spans until every node it changed has
 * ACKed (exit 0), one NACKed (exit 1, naming the nodes and their messages), or `timeoutMs`
 * passed (exit 1, naming the nodes still pending). A node connected nowhere is not waited for:
 * it is sent the revision whenever it connects.
 */
export async function waitForRollout(client: ApiClient, written: { readonly from: number; readonly revision: number }, timeoutMs: number, io: CliIo): Promise<number> {
  if (written.revision === written.from) {
    io.stdout.write('Nothing was written: nothing to roll out.\n');
    return EXIT.ok;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = (await client.request('GET', rolloutPath(written.revision, written.from))).body as RolloutAnswer;
    if (answer.complete || answer.nodes.nacked > 0 || Date.now() >= deadline) {
      io.stdout.write(rolloutText(answer));
      if (answer.complete) return EXIT.ok;
      io.stderr.write(answer.nodes.nacked > 0 ? 'Refused by some nodes (NACK): see above.\n' : `Timed out after ${timeoutMs / 1000}s with nodes pending: see above.\n`);
      return EXIT.failed;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}
