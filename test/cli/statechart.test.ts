import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { renderStatechart, STATECHART_FORMATS } from '../../src/machines/statechart-formats.js';
import { runCli } from './cli-harness.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('chancery statechart', () => {
  it('prints the chart as Mermaid by default, with no server running', async () => {
    // No --api-address and nothing listening: the chart comes from the machine, not a server.
    const { code, stdout, stderr } = await runCli(['statechart']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toBe(await renderStatechart('mermaid'));
    expect(stdout).toMatch(/^stateDiagram-v2\n/);
  });

  it.each(STATECHART_FORMATS)('prints the %s rendering for --format %s', async (format) => {
    const { code, stdout } = await runCli(['statechart', '--format', format]);
    expect(code).toBe(0);
    expect(stdout).toBe(await renderStatechart(format));
  });

  it('writes to the file named by --output and prints nothing', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chancery-statechart-'));
    const file = path.join(dir, 'session.svg');
    const { code, stdout } = await runCli(['statechart', '--format', 'svg', '--output', file]);
    expect(code).toBe(0);
    expect(stdout).toBe('');
    expect(await readFile(file, 'utf8')).toBe(await renderStatechart('svg'));
  });

  it('exits 2 naming --format and the formats it takes for an unknown format', async () => {
    const { code, stdout, stderr } = await runCli(['statechart', '--format', 'png']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('chancery statechart: --format must be one of mermaid, dot, svg, json; got "png"');
  });

  it('exits 2 naming --output when the file cannot be written', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chancery-statechart-'));
    const { code, stderr } = await runCli(['statechart', '--output', path.join(dir, 'missing', 'chart.mmd')]);
    expect(code).toBe(2);
    expect(stderr).toContain(`--output ${path.join(dir, 'missing', 'chart.mmd')} cannot be written`);
  });

  it('is listed by chancery --help and explains itself with --help', async () => {
    expect((await runCli(['--help'])).stdout).toContain('  statechart  ');
    const help = await runCli(['statechart', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: chancery statechart \[--format mermaid\|dot\|svg\|json\] \[--output FILE\]/);
  });
});
