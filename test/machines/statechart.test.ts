import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { DEFAULTS } from '../../src/defaults.js';
import { SESSION_STATES, sessionMachine } from '../../src/machines/index.js';
import { chartOf, type Statechart } from '../../src/machines/statechart.js';
import { renderStatechart, STATECHART_FORMATS, toDot, toMermaid } from '../../src/machines/statechart-formats.js';

/**
 * The chart as the test derives it, independently of the exporter: from the machine's config as
 * written (`sessionMachine.config`), not from the StateNode objects the exporter walks.
 */
interface Expected {
  readonly initial: string;
  /** Every state's id. */
  readonly states: readonly string[];
  /** States with children: clusters in DOT, blocks in Mermaid. */
  readonly composites: readonly string[];
  readonly finals: readonly string[];
  /** `source -> target : label`, or `source : label` for a transition that stays put. */
  readonly edges: readonly string[];
  readonly transitions: readonly TransitionFacts[];
}

interface TransitionFacts {
  readonly source: string;
  readonly targets: readonly string[];
  readonly event: string;
  readonly guard?: string;
  readonly delay?: string;
  readonly reenter: boolean;
}

interface ConfigTransition {
  readonly target?: string;
  readonly guard?: string;
  readonly reenter?: boolean;
}

interface ConfigState {
  readonly id?: string;
  readonly type?: string;
  readonly initial?: string;
  readonly on?: Readonly<Record<string, ConfigTransition | readonly ConfigTransition[]>>;
  readonly after?: Readonly<Record<string, ConfigTransition>>;
  readonly always?: ConfigTransition | readonly ConfigTransition[];
  readonly states?: Readonly<Record<string, ConfigState>>;
}

const list = <T,>(value: T | readonly T[] | undefined): readonly T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value as T]);

function expectedChart(): Expected {
  const config = sessionMachine.config as unknown as ConfigState;
  const states: string[] = [];
  const composites: string[] = [];
  const finals: string[] = [];
  const transitions: TransitionFacts[] = [];
  const edges: string[] = [];
  // Every state of the session chart has its own id, and every target names one (`#serving`).
  const idOf = (key: string, state: ConfigState) => state.id ?? key;
  const target = (written: string) => written.replace(/^#/, '');
  const add = (id: string, event: string, label: string, transition: ConfigTransition, delay?: string) => {
    const targets = transition.target === undefined ? [] : [target(transition.target)];
    const { guard } = transition;
    transitions.push({ source: id, targets, event, reenter: transition.reenter === true, ...(guard && { guard }), ...(delay && { delay }) });
    const shown = guard === undefined ? label : `${label} [${guard}]`;
    if (targets.length === 0) edges.push(`${id} : ${shown}`);
    for (const to of targets) edges.push(`${id} -> ${to} : ${shown}`);
  };
  const walk = (key: string, state: ConfigState) => {
    const id = idOf(key, state);
    states.push(id);
    if (state.type === 'final') finals.push(id);
    if (state.states !== undefined) composites.push(id);
    for (const [event, written] of Object.entries(state.on ?? {})) for (const transition of list(written)) add(id, event, event, transition);
    // The session chart's one delay reads the eviction grace from context: the chart shows its default.
    for (const [delay, transition] of Object.entries(state.after ?? {})) {
      add(id, `xstate.after.${delay}.${id}`, `after ${DEFAULTS.evictionGrace}ms (${delay})`, transition, delay);
    }
    for (const transition of list(state.always)) add(id, '', 'always', transition);
    for (const [childKey, child] of Object.entries(state.states ?? {})) walk(childKey, child);
  };
  for (const [key, state] of Object.entries(config.states ?? {})) walk(key, state);
  return { initial: config.initial!, states, composites, finals, edges, transitions };
}

/** What a rendering says: its states (composites among them), initial and final states, and every edge. */
interface Parsed {
  readonly initial: string[];
  readonly states: string[];
  readonly composites: string[];
  readonly finals: string[];
  readonly edges: string[];
}

const parsedEmpty = (): Parsed => ({ initial: [], states: [], composites: [], finals: [], edges: [] });

function parseMermaid(text: string): Parsed {
  const lines = text.trimEnd().split('\n');
  expect(lines.slice(0, 2)).toEqual(['stateDiagram-v2', '  direction LR']);
  const names = new Map<string, string>();
  const parsed = parsedEmpty();
  const name = (id: string) => names.get(id) ?? id;
  const open: string[] = [];
  for (const line of lines.slice(2).map((raw) => raw.trim())) {
    const alias = /^state "([^"]+)" as (\w+)$/.exec(line);
    const bare = /^(\w+)$/.exec(line);
    const block = /^state (\w+) \{$/.exec(line);
    const edge = /^(\S+) --> (\S+)(?: : (.+))?$/.exec(line);
    const internal = /^(\w+) : (.+)$/.exec(line);
    if (alias) names.set(alias[2]!, alias[1]!);
    else if (bare) names.set(bare[1]!, bare[1]!);
    else if (block) {
      parsed.composites.push(name(block[1]!));
      open.push(name(block[1]!));
    } else if (line === '}') open.pop();
    // A block's own start is its initial child, not the chart's.
    else if (edge?.[1] === '[*]') {
      if (open.length === 0) parsed.initial.push(name(edge[2]!));
    } else if (edge?.[2] === '[*]') parsed.finals.push(name(edge[1]!));
    else if (edge) parsed.edges.push(`${name(edge[1]!)} -> ${name(edge[2]!)} : ${edge[3]}`);
    else if (internal) parsed.edges.push(`${name(internal[1]!)} : ${internal[2]}`);
    else throw new Error(`unexpected Mermaid line: ${line}`);
  }
  const mentioned = parsed.edges.flatMap((edge) => edge.split(' : ')[0]!.split(' -> '));
  parsed.states.push(...new Set([...names.values(), ...parsed.composites, ...mentioned, ...parsed.initial, ...parsed.finals]));
  return parsed;
}

function parseDot(text: string): Parsed {
  const lines = text.trimEnd().split('\n');
  expect(lines[0]).toBe('digraph "session" {');
  expect(lines.at(-1)).toBe('}');
  const parsed = parsedEmpty();
  const rows = (label: string) => [...label.matchAll(/<td align="left">([^<]+)<\/td>/g)].map((row) => row[1]!);
  const open: string[] = [];
  for (const line of lines.slice(1, -1).map((raw) => raw.trim())) {
    if (/^(graph|node|edge) \[/.test(line)) continue;
    const cluster = /^subgraph "cluster_([^"]+)" \{$/.exec(line);
    const clusterLabel = /^label=(.*); style=rounded;$/.exec(line);
    const edge = /^"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?;$/.exec(line);
    const node = /^"([^"]+)" \[(.*)\];$/.exec(line);
    if (cluster) {
      parsed.composites.push(cluster[1]!);
      parsed.states.push(cluster[1]!);
      open.push(cluster[1]!);
    } else if (clusterLabel) {
      for (const row of rows(clusterLabel[1]!)) parsed.edges.push(`${open.at(-1)} : ${row}`);
    } else if (line === '}') open.pop();
    else if (edge?.[1]?.startsWith('__initial__')) {
      if (edge[1] === '__initial__') parsed.initial.push(edge[2]!);
    } else if (edge) {
      const attributes = edge[3] ?? '';
      // An edge to or from a cluster is drawn between leaves and clipped at the cluster's border.
      const tail = /ltail="cluster_([^"]+)"/.exec(attributes)?.[1] ?? edge[1]!;
      const head = /lhead="cluster_([^"]+)"/.exec(attributes)?.[1] ?? edge[2]!;
      parsed.edges.push(`${tail} -> ${head} : ${/label="([^"]*)"/.exec(attributes)?.[1]}`);
    } else if (node?.[1]?.startsWith('__initial__')) expect(node[2]).toContain('shape=point');
    else if (node) {
      const [, id, attributes] = node as unknown as [string, string, string];
      parsed.states.push(id);
      if (attributes.includes('peripheries=2')) parsed.finals.push(id);
      const plain = /^label="([^"]+)"/.exec(attributes);
      const bold = /<b>([^<]+)<\/b>/.exec(attributes);
      expect(plain?.[1] ?? bold?.[1]).toBe(id);
      for (const row of rows(attributes)) parsed.edges.push(`${id} : ${row}`);
    } else throw new Error(`unexpected DOT line: ${line}`);
  }
  return parsed;
}

function expectSameChart(parsed: Parsed, expected: Expected): void {
  expect(parsed.initial).toEqual([expected.initial]);
  expect([...parsed.states].sort()).toEqual([...expected.states].sort());
  expect([...parsed.composites].sort()).toEqual([...expected.composites].sort());
  expect([...parsed.finals].sort()).toEqual([...expected.finals].sort());
  expect([...parsed.edges].sort()).toEqual([...expected.edges].sort());
}

const expected = expectedChart();

describe('the session chart, exported from the machine', () => {
  it('is derived from the chart the test walks on its own, which has the five states of DESIGN §4 and the steps of awaiting-snapshot', () => {
    const steps = ['arriving', 'catching-up', 'store-unreadable', 'generating'];
    expect([...expected.states].sort()).toEqual([...SESSION_STATES, 'streaming', ...steps].sort());
    expect(expected.composites).toEqual(['streaming', 'awaiting-snapshot']);
    expect(expected.finals).toEqual(['evicted']);
    expect(expected.edges).toContain(`disconnected -> evicted : after ${DEFAULTS.evictionGrace}ms (evictionGrace)`);
  });

  it('as JSON, holds exactly the machine’s states and transitions, with the delay resolved to ms', async () => {
    const chart = JSON.parse(await renderStatechart('json')) as Statechart;
    expect(chart.id).toBe('session');
    expect(chart.initial).toBe(expected.initial);
    expect(chart.states.map((state) => state.id).sort()).toEqual([...expected.states].sort());
    expect(chart.states.filter((state) => state.type === 'final').map((state) => state.id)).toEqual(expected.finals);
    const facts = chart.transitions.map(({ source, targets, trigger, guard, reenter }): TransitionFacts => ({
      source,
      targets,
      event: trigger.kind === 'always' ? '' : trigger.event,
      reenter: reenter === true,
      ...(guard !== undefined && { guard }),
      ...(trigger.kind === 'after' && typeof trigger.delay === 'string' && { delay: trigger.delay }),
    }));
    const key = (transition: TransitionFacts) => JSON.stringify(transition, Object.keys(transition).sort());
    expect(facts.map(key).sort()).toEqual(expected.transitions.map(key).sort());
    const delayed = chart.transitions.filter((transition) => transition.trigger.kind === 'after');
    expect(delayed.map((transition) => transition.trigger)).toEqual([
      { kind: 'after', event: 'xstate.after.evictionGrace.disconnected', delay: 'evictionGrace', ms: DEFAULTS.evictionGrace },
    ]);
  });

  it('as JSON, names the one state that raises events within its step: generating, what it generated', async () => {
    const chart = JSON.parse(await renderStatechart('json')) as Statechart;
    const raising = chart.states.filter((state) => state.raises !== undefined).map(({ id, raises }) => [id, raises]);
    expect(raising).toEqual([['generating', ['snapshot.generated', 'snapshot.failed']]]);
    // Each event it raises is one the chart takes around it.
    const taken = new Set(chart.transitions.flatMap(({ trigger, source }) => (trigger.kind === 'event' && source === 'awaiting-snapshot' ? [trigger.event] : [])));
    for (const event of raising[0]![1] as string[]) expect(taken).toContain(event);
  });

  it('as Mermaid, draws exactly those states and transitions', async () => {
    expectSameChart(parseMermaid(await renderStatechart('mermaid')), expected);
  });

  it('as DOT, draws exactly those states and transitions, one node per state named by its id', async () => {
    expectSameChart(parseDot(await renderStatechart('dot')), expected);
  });

  it('is one model: Mermaid and DOT of the JSON chart are the exported Mermaid and DOT', async () => {
    const chart = JSON.parse(await renderStatechart('json')) as Statechart;
    expect(toMermaid(chart)).toBe(await renderStatechart('mermaid'));
    expect(toDot(chart)).toBe(await renderStatechart('dot'));
    expect(STATECHART_FORMATS).toEqual(['mermaid', 'dot', 'svg', 'json']);
  });
});

describe('the SVG rendering', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  });
  afterAll(async () => {
    await browser.close();
  });

  it('is well-formed XML with an <svg> root and a node titled with each state', async () => {
    const svg = await renderStatechart('svg');
    const page = await browser.newPage();
    // Served as image/svg+xml, the browser parses it with its strict XML parser: any malformed
    // markup shows a <parsererror> instead of the drawing.
    await page.goto(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
    const errors = await page.locator('parsererror').count();
    const roots = await page.locator('xpath=/*[local-name()="svg"]').count();
    const titles = await page.locator('g.node > title').allTextContents();
    await page.close();
    expect(errors).toBe(0);
    expect(roots).toBe(1);
    // Leaves are nodes titled by id; compound states are clusters titled cluster_<id>.
    const leaves = expected.states.filter((state) => !expected.composites.includes(state));
    expect(titles.filter((title) => !title.startsWith('__initial__')).sort()).toEqual([...leaves].sort());
    const clusters = await (async () => {
      const again = await browser.newPage();
      await again.goto(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
      const found = await again.locator('g.cluster > title').allTextContents();
      await again.close();
      return found;
    })();
    expect(clusters.sort()).toEqual(expected.composites.map((id) => `cluster_${id}`).sort());
  });
});

describe('chartOf, on a chart with nesting, parallel regions, eventless and timed transitions', () => {
  const machine = createMachine({
    id: 'toy',
    initial: 'off',
    states: {
      off: { on: { POWER: { target: 'on', guard: 'charged' } } },
      on: {
        type: 'parallel',
        states: {
          light: { initial: 'dim', states: { dim: { on: { UP: 'bright' } }, bright: { after: { 500: 'dim' } } } },
          sound: { initial: 'mute', states: { mute: { always: { target: 'loud', guard: 'noisy' } }, loud: {} } },
        },
        on: { POWER: 'done' },
      },
      done: { type: 'final' },
    },
  });
  const chart = chartOf(machine);

  it('lists every state with its parent, type and initial child', () => {
    expect(chart.initial).toBe('off');
    expect(chart.states).toEqual([
      { id: 'off', key: 'off', type: 'atomic' },
      { id: 'on', key: 'on', type: 'parallel' },
      { id: 'on.light', key: 'light', type: 'compound', parent: 'on', initial: 'on.light.dim' },
      { id: 'on.light.dim', key: 'dim', type: 'atomic', parent: 'on.light' },
      { id: 'on.light.bright', key: 'bright', type: 'atomic', parent: 'on.light' },
      { id: 'on.sound', key: 'sound', type: 'compound', parent: 'on', initial: 'on.sound.mute' },
      { id: 'on.sound.mute', key: 'mute', type: 'atomic', parent: 'on.sound' },
      { id: 'on.sound.loud', key: 'loud', type: 'atomic', parent: 'on.sound' },
      { id: 'done', key: 'done', type: 'final' },
    ]);
  });

  it('lists every transition: by event with its guard, after a numeric delay, and eventless', () => {
    expect(chart.transitions).toEqual([
      { source: 'off', targets: ['on'], trigger: { kind: 'event', event: 'POWER' }, guard: 'charged' },
      { source: 'on', targets: ['done'], trigger: { kind: 'event', event: 'POWER' } },
      { source: 'on.light.dim', targets: ['on.light.bright'], trigger: { kind: 'event', event: 'UP' } },
      {
        source: 'on.light.bright',
        targets: ['on.light.dim'],
        trigger: { kind: 'after', event: 'xstate.after.500.toy.on.light.bright', delay: 500, ms: 500 },
      },
      { source: 'on.sound.mute', targets: ['on.sound.loud'], trigger: { kind: 'always' }, guard: 'noisy' },
    ]);
  });

  it('draws nested states inside their parents in Mermaid and as clusters in DOT', () => {
    const mermaid = toMermaid(chart);
    expect(mermaid).toContain('  state on {\n    state "light" as on_light\n    state on_light {\n');
    expect(mermaid).toContain('    --\n');
    expect(mermaid).toContain('\n  on_light_bright --> on_light_dim : after 500ms\n');
    expect(mermaid).toContain('\n  on_sound_mute --> on_sound_loud : always [noisy]\n');
    const dot = toDot(chart);
    expect(dot).toContain('subgraph "cluster_on.light" {');
    expect(dot).toContain('"off" -> "on.light.dim" [label="POWER [charged]", id="t0", lhead="cluster_on"];');
    expect(dot).toContain('"on.light.dim" -> "done" [label="POWER", id="t1", ltail="cluster_on"];');
  });
});
