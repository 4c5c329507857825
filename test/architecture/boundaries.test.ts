import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function sources(folder: string): string[] {
  const dir = path.join(root, folder);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

function read(file: string): string {
  return readFileSync(path.join(root, file), 'utf8');
}

/** Module specifiers a file imports, static and dynamic. */
function importsOf(file: string): string[] {
  return [...read(file).matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => match[1]!);
}

const all = sources('src');

describe('the layers of DESIGN.md section 8', () => {
  it('lets only the generator seal a Snapshot (I1)', () => {
    const sealing = all.filter((file) => /\bsealSnapshot\(/.test(read(file)));
    expect(sealing.sort()).toEqual(['src/mesh/generator.ts', 'src/xds/snapshot.ts']);
  });

  it('keeps gRPC in src/xds', () => {
    const offenders = all.filter((file) => !file.startsWith('src/xds/') && importsOf(file).some((s) => s.startsWith('@grpc/')));
    expect(offenders).toEqual([]);
  });

  it('keeps database drivers in src/store', () => {
    const offenders = all.filter(
      (file) => !file.startsWith('src/store/') && importsOf(file).some((s) => s === 'pg' || s.startsWith('@electric-sql/')),
    );
    expect(offenders).toEqual([]);
  });

  it('keeps clocks, timers, the environment and loggers out of the generator, the policies and the session chart', () => {
    const pure = all.filter((file) => file.startsWith('src/mesh/') || file.startsWith('src/policies/') || file.startsWith('src/machines/'));
    const offenders = pure.filter(
      (file) => /\bDate\.now\(|new Date\(\)|\bsetTimeout\(|\bsetInterval\(|\bsetImmediate\(|process\.env/.test(read(file)) || importsOf(file).includes('pino'),
    );
    expect(pure.length).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
  });

  it('lets no code cast a value to a Snapshot: only sealSnapshot makes one (I1)', () => {
    const casts = all.filter((file) => /\bas\s+(unknown\s+as\s+)?Snapshot\b|<Snapshot>/.test(read(file)));
    expect(casts).toEqual([]);
  });

  it('keeps policy matching pure and below the generator: src/policies imports no other folder but the common helpers, and no package', () => {
    const offenders = all.filter(
      (file) => file.startsWith('src/policies/') && importsOf(file).some((s) => !s.startsWith('./') && s !== '../common/index.js'),
    );
    expect(all.filter((file) => file.startsWith('src/policies/')).length).toBeGreaterThan(4);
    expect(offenders).toEqual([]);
  });

  it('keeps the generator apart from the store: src/mesh imports nothing from src/store', () => {
    const offenders = all.filter((file) => file.startsWith('src/mesh/') && importsOf(file).some((s) => s.includes('/store/')));
    expect(offenders).toEqual([]);
  });

  it('imports from another folder only through its index, types included, with no exemption', () => {
    const offenders: string[] = [];
    for (const file of all) {
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = path.normalize(path.join(path.dirname(file), specifier));
        const parts = target.split(path.sep);
        if (parts.length === 2) continue; // a module at the top of src/, such as control-plane.ts
        if (parts.slice(0, 2).join('/') === file.split('/').slice(0, 2).join('/')) continue;
        if (parts.length !== 3 || parts[2] !== 'index.js') offenders.push(`${file} → ${specifier}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('keeps the common helpers at the bottom: src/common imports no other folder and no package', () => {
    const common = all.filter((file) => file.startsWith('src/common/'));
    expect(common.length).toBeGreaterThan(8);
    expect(common.filter((file) => importsOf(file).some((s) => !s.startsWith('./')))).toEqual([]);
  });

  it('leaves at the top of src only the library, the control plane that wires the folders, and its options', () => {
    const top = all.filter((file) => file.split('/').length === 2).sort();
    expect(top).toEqual(['src/control-plane-options.ts', 'src/control-plane.ts', 'src/defaults.ts', 'src/errors.ts', 'src/index.ts']);
  });

  it('gives every folder of src an index', () => {
    const folders = [...new Set(all.map((file) => file.split('/')[1]!).filter((part) => !part.endsWith('.ts')))];
    const missing = folders.filter((folder) => !all.includes(`src/${folder}/index.ts`));
    expect(folders.length).toBeGreaterThan(8);
    expect(missing).toEqual([]);
  });
});

/** What `file` loads when it runs: its static value imports (`import type` is erased), resolved to files of src. */
function loadedBy(file: string): { readonly files: string[]; readonly packages: string[] } {
  const text = read(file).replace(/^(?:import|export) type [^;]*;/gms, '');
  const specifiers = [...text.matchAll(/^(?:import|export)\s[^;]*?from\s*'([^']+)'/gms)].map((match) => match[1]!);
  const files = specifiers.filter((s) => s.startsWith('.')).map((s) => path.normalize(path.join(path.dirname(file), s)).replace(/\.js$/, '.ts'));
  return { files, packages: specifiers.filter((s) => !s.startsWith('.')) };
}

/** Every file and package `file` loads, however indirectly. */
function closureOf(file: string): { readonly files: Set<string>; readonly packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (at: string) => {
    const loaded = loadedBy(at);
    for (const name of loaded.packages) packages.add(name);
    for (const next of loaded.files) {
      if (files.has(next)) continue;
      files.add(next);
      visit(next);
    }
  };
  visit(file);
  return { files, packages };
}

describe('the per-stream protocol state (src/xds/stream), DESIGN.md section 8', () => {
  const STREAM = 'src/xds/stream/';
  const stream = all.filter((file) => file.startsWith(STREAM));

  it('is a folder of its own, with an index the rest of src/xds goes through', () => {
    expect(stream).toContain(`${STREAM}index.ts`);
    expect(stream.length).toBeGreaterThan(6);
    const deep = all.filter((file) => !file.startsWith(STREAM) && importsOf(file).some((s) => s.includes('stream/') && !s.endsWith('stream/index.js')));
    expect(deep).toEqual([]);
  });

  it('imports nothing above it: nothing it loads, however indirectly, loads it back, and no gRPC, XState, logger or I/O', () => {
    const above: string[] = [];
    const packages = new Set<string>();
    for (const file of stream) {
      const closure = closureOf(file);
      for (const loaded of closure.files) if (!loaded.startsWith(STREAM) && closureOf(loaded).files.has(file)) above.push(`${file} → ${loaded}`);
      for (const name of closure.packages) packages.add(name);
    }
    expect(above).toEqual([]);
    // Hashing is all it needs of Node: a content hash is a version (I6).
    expect([...packages].sort()).toEqual(['node:crypto']);
  });
});
