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

/** Module specifiers a file imports values from (type-only imports vanish at run time). */
function valueImportsOf(file: string): string[] {
  return [...read(file).matchAll(/^import\s+(?!type\b)[^;]*?from\s+'([^']+)'/gms)].map((match) => match[1]!);
}

const all = sources('src');

describe('the layers of DESIGN.md section 8', () => {
  it('lets only the generator seal a Snapshot (I1)', () => {
    const sealing = all.filter((file) => /\bsealSnapshot\b/.test(read(file)));
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

  it('keeps clocks, timers, the environment and loggers out of the generator and the session chart', () => {
    const pure = all.filter((file) => file.startsWith('src/mesh/') || file.startsWith('src/machines/session-'));
    const offenders = pure.filter(
      (file) =>
        !file.endsWith('session-registry.ts') &&
        (/\bDate\.now\(|new Date\(\)|\bsetTimeout\(|\bsetInterval\(|process\.env/.test(read(file)) ||
          importsOf(file).includes('pino')),
    );
    expect(offenders).toEqual([]);
  });

  it('takes values from other folders only through their index', () => {
    const offenders: string[] = [];
    for (const file of all) {
      for (const specifier of valueImportsOf(file)) {
        if (!specifier.startsWith('../')) continue;
        const target = path.normalize(path.join(path.dirname(file), specifier));
        const parts = target.split(path.sep);
        if (parts.length === 2) continue; // a module at the top of src/, such as control-plane.ts
        if (parts.slice(0, 2).join('/') === file.split('/').slice(0, 2).join('/')) continue;
        // src/machines and src/xds are one layer seen from two sides: sessions speak the wire's types.
        const allowed = target.endsWith('/index.js') || /^src\/(xds|machines)\//.test(target);
        if (!allowed) offenders.push(`${file} → ${specifier}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
