/**
 * `npm run bench [-- SCENARIO…] [-- options]`: runs every `bench/*.bench.ts` (or those
 * named), one after another, each printing its tables. Options after the scenario names go
 * to every scenario, e.g. `npm run bench -- sessions --n 1000`. Never part of `npm test`.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const firstOption = argv.findIndex((arg) => arg.startsWith('-'));
const names = firstOption === -1 ? argv : argv.slice(0, firstOption);
const options = firstOption === -1 ? [] : argv.slice(firstOption);

const available = readdirSync(here)
  .filter((file) => file.endsWith('.bench.ts'))
  .map((file) => file.slice(0, -'.bench.ts'.length))
  .sort();
const unknown = names.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`unknown bench ${unknown.join(', ')}; available: ${available.join(', ')}`);
  process.exit(2);
}

for (const name of names.length > 0 ? names : available) {
  const started = Date.now();
  console.log(`\n=== bench ${name} ===`);
  const module = (await import(pathToFileURL(path.join(here, `${name}.bench.ts`)).href)) as { default: (argv: readonly string[]) => Promise<void> };
  try {
    await module.default(options);
  } catch (error) {
    console.error(`\nbench ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
  console.log(`\n=== bench ${name}: ${((Date.now() - started) / 1000).toFixed(0)} s ===`);
}
