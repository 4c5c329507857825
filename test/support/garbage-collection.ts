import v8 from 'node:v8';
import vm from 'node:vm';

// The running process may not have been started with --expose-gc: this makes `gc` available to contexts made from now on.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/**
 * Runs full garbage collections until the objects only weak references reach are let go. A
 * weak reference's target lives to the end of the job that made or last read it, and some
 * callbacks still pending hold what they were given: each round first lets the loop turn.
 */
export async function collectGarbage(rounds = 3): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
}
