#!/usr/bin/env -S node --max-semi-space-size=32 --liftoff-only
// The `chancery` command. Runs the compiled CLI when `npm run build` has made one, and the
// TypeScript source through tsx otherwise, so `npx chancery` works in a fresh clone. The first
// line passes Node the flags `chancery run` starts with (src/cli/node-flags.ts).
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli/main.js', import.meta.url);
let entry = built.href;
if (!existsSync(built)) {
  const { register } = await import('tsx/esm/api');
  register();
  entry = new URL('../src/cli/main.ts', import.meta.url).href;
}
const { main } = await import(entry);
// process.exit, as fetch keeps idle connections open for a few seconds after a client command.
process.exit(await main(process.argv.slice(2)));
