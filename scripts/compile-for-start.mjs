// `npm start` runs Chancery compiled ahead rather than through tsx's loader, which held 56 MB
// more resident (its hooks thread and transforms; bench/idle-memory.bench.ts), a quarter of
// the embedded default's budget. It also starts Node with MALLOC_MMAP_THRESHOLD_ fixed at
// glibc's initial 128 KiB: glibc otherwise raises the threshold as large blocks are freed
// (V8's compilation zones for PGlite's WebAssembly), keeps the next ones in its arenas, and
// holds 20–30 MB it no longer uses (same bench, median of its runs). esbuild compiles each
// file alone, exactly as tsx would on load, in well under a second; `npm run build` (tsc, with
// types) stays the build to publish.
// The output mirrors the repository under node_modules/.cache/chancery-start (a tool cache,
// outside what git and the tests' clean-tree check see) so that paths read relative to a module
// (proto/, src/api/ui/) resolve as they do from src/.
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const out = path.join(root, 'node_modules', '.cache', 'chancery-start');
const sources = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  .map((file) => path.join(root, 'src', file));

// Written over, never emptied first: another `npm start` may be running from it.
await build({ entryPoints: sources, outdir: path.join(out, 'src'), outbase: path.join(root, 'src'), format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' });
// Node finds no package scope inside node_modules: the output says it is ESM itself.
writeFileSync(path.join(out, 'package.json'), '{ "type": "module" }\n');
// What modules read beside themselves, linked rather than copied.
for (const dir of ['proto', 'src/api/ui']) {
  const link = path.join(out, dir);
  mkdirSync(path.dirname(link), { recursive: true });
  if (!existsSync(link)) symlinkSync(path.join(root, dir), link);
}
