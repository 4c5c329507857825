/**
 * The Node flags `chancery run` starts with: `npm start`, `npm run chancery` and
 * `bin/chancery.js` (its first line) pass them, and `--workers` hands them on to each worker.
 *
 * A young generation of 64 MB semi-spaces, where V8 takes 16 MB on this size of machine: a
 * session's state is replaced at every push and every ACK, and with 16 MB the replaced state
 * lives through two scavenges, is promoted, and fills the old generation until a major GC of a
 * 300 MB heap falls inside a change every second change or so. At 10,000 sessions a change
 * costs 55–85 µs a node instead of 62–129 and a connection storm 5–10 % less CPU; the loop lag
 * p99 in a change is 40–60 ms (once 77), where the default's is 25–45 ms with spikes of 56–170
 * ms whenever a major GC falls in (bench/README.md). A service embedding Chancery can start
 * Node with them too.
 */
export const NODE_FLAGS = ['--max-semi-space-size=64'] as const;
