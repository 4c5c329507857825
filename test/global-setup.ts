import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
/** Where tests may write: screenshots for a person to look at. */
const ALLOWED = ['test/artifacts/'];

/** Every path git sees as changed, new or ignored, one level deep in new folders. */
function untracked(): Set<string> {
  const text = execFileSync('git', ['status', '--porcelain', '--ignored', '--untracked-files=normal'], { cwd: ROOT, encoding: 'utf8' });
  return new Set(text.split('\n').filter((line) => line !== '').map((line) => line.slice(3)));
}

/** Fails the run when a test wrote into the repository: tests write to temporary directories only. */
export default function setup(): () => void {
  const before = untracked();
  return () => {
    const written = [...untracked()].filter((file) => !before.has(file) && !ALLOWED.some((allowed) => file.startsWith(allowed)));
    if (written.length === 0) return;
    // A teardown's error is printed but does not fail the run by itself.
    process.exitCode = 1;
    throw new Error(`tests wrote into the repository: ${written.join(', ')}; write to a temporary directory instead`);
  };
}
