/**
 * The Node flags `chancery run` starts with: `npm start`, `npm run chancery` and
 * `bin/chancery.js` (its first line) pass them, and `--workers` hands them on to each worker.
 *
 * A young generation of 32 MB semi-spaces, where V8 takes 16 MB on this size of machine: a
 * session's state is replaced at every push and every ACK, and with 16 MB the replaced state
 * lives through two scavenges, is promoted, and fills the old generation until a major GC of a
 * 300 MB heap falls inside every second change. With 32 MB one fell in 3 of 24 changes: at
 * 10,000 sessions a change costs 55–84 µs a node (100–105 with the major GC) instead of 62–129,
 * the loop lag p99 in a change 36–46 ms. 64 MB spares a few µs more but holds the lag at 45–60
 * ms, and the process 85 MB more while busy, against 37 MB for 32 (bench/README.md).
 *
 * WebAssembly compiled by V8's baseline compiler only: the only WebAssembly is the embedded
 * store's Postgres (PGlite, 9 MB), and optimising it in the background kept ~70 MB resident for
 * good (an idle `npm start` on PGlite 199 → 126 MB for PGlite alone) while its writes were no
 * faster (2,000 inserts 0.73–0.88 s against 1.1–1.5 s, the optimiser competing for the two cores).
 * A service embedding Chancery can start Node with them too.
 */
export const NODE_FLAGS = ['--max-semi-space-size=32', '--liftoff-only'] as const;
