import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../../src/cli/node-flags.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/chancery.js');

describe('the Node flags chancery run starts with (src/cli/node-flags.ts)', () => {
  it('are passed by npm start, npm run chancery and the first line of bin/chancery.js', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const firstLine = readFileSync(BIN, 'utf8').split('\n')[0]!;
    expect(scripts['start']).toContain(`exec node ${NODE_FLAGS.join(' ')} `);
    expect(scripts['chancery']).toContain(`exec node ${NODE_FLAGS.join(' ')} `);
    for (const flag of NODE_FLAGS) expect(firstLine.split(' ')).toContain(flag);
  });

  it('leave bin/chancery.js a command the system runs by its first line', async () => {
    const { stdout } = await promisify(execFile)(BIN, ['--help'], { cwd: ROOT });
    expect(stdout).toContain('Usage: chancery');
  });
});
