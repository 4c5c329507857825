import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { DEFAULTS } from '../../src/control-plane-options.js';
import { sessionMachine } from '../../src/machines/session-machine.js';
import { chartOf, type Statechart } from '../../src/machines/statechart.js';
import { renderStatechart, STATECHART_FORMATS, toDot, toMermaid } from '../../src/machines/statechart-formats.js';

/**
 * The chart as the test derives it, independently of the exporter: from the machine's JSON
 * definition (`machine.definition`, serialised), not from the StateNode objects it walks.
 */
interface Expected {
  readonly initial: string;
  readonly states: readonly string[];
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

interface JsonTransition {
  readonly eventType: string;
  readonly target?: readonly string[];
  readonly guard?: string | { readonly type: string };
  readonly delay?: string | number;
  readonly reenter: boolean;
}

interface JsonState {
  readonly id: string;
  readonly type: string;
  readonly states: Readonly<Record<string, JsonState>>;
  readonly transitions: readonly JsonTransition[];
}

function expectedChart(): Expected {
  const definition = JSON.parse(JSON.stringify(sessionMachine.definition)) as JsonState & { initial: { target: string[] } };
  const rootPrefix = `${definition.id}.`;
  const local = (id: string) => id.replace(/^#/, '').slice(rootPrefix.length);
  const states: string[] = [];
  const finals: string[] = [];
  const transitions: TransitionFacts[] = [];
  const edges: string[] = [];
  const walk = (state: JsonState) => {
    const id = local(state.id);
    states.push(id);
    if (state.type === 'final') finals.push(id);
    for (const transition of state.transitions) {
      const guard = typeof transition.guard === 'object' ? transition.guard.type : transition.guard;
      const delay = typeof transition.delay === 'string' ? transition.delay : undefined;
      const targets = (transition.target ?? []).map(local);
      const event = transition.eventType;
      transitions.push({ source: id, targets, event, reenter: transition.reenter, ...(guard && { guard }), ...(delay && { delay }) });
      // The session chart's one delay reads the eviction grace from context: the chart shows its default.
      const on = delay === undefined ? transition.eventType : `after ${DEFAULTS.evictionGrace}ms (${delay})`;
      const label = guard === undefined ? on : `${on} [${guard}]`;
      if (targets.length === 0) edges.push(`${id} : ${label}`);
      for (const target of targets) edges.push(`${id} -> ${target} : ${label}`);
    }
    for (const child of Object.values(state.states)) walk(child);
  };
  for (const child of Object.values(definition.states)) walk(child);
  return { initial: local(definition.initial.target[0]!), states, finals, edges, transitions };
}

/** What a rendering says: its states, initial and final states, and every edge. */
interface Parsed {
  readonly initial: string[];
  readonly states: string[];
  readonly finals: string[];
  readonly edges: string[];
}

function parseMermaid(text: string): Parsed {
  const lines = text.trimEnd().split('\n');
  expect(lines.slice(0, 2)).toEqual(['stateDiagram-v2', '  direction LR']);
  const names = new Map<string, string>();
  const parsed: Parsed = { initial: [], states: [], finals: [], edges: [] };
  const name = (id: string) => names.get(id) ?? id;
  for (const line of lines.slice(2).map((raw) => raw.trim())) {
    const alias = /^state "([^"]+)" as (\w+)$/.exec(line);
    const edge = /^(\S+) --> (\S+)(?: : (.+))?$/.exec(line);
    const internal = /^(\w+) : (.+)$/.exec(line);
    if (alias) names.set(alias[2]!, alias[1]!);
    else if (edge?.[1] === '[*]') parsed.initial.push(name(edge[2]!));
    else if (edge?.[2] === '[*]') parsed.finals.push(name(edge[1]!));
    else if (edge) parsed.edges.push(`${name(edge[1]!)} -> ${name(edge[2]!)} : ${edge[3]}`);
    else if (internal) parsed.edges.push(`${name(internal[1]!)} : ${internal[2]}`);
    else throw new Error(`unexpected Mermaid line: ${line}`);
  }
  const mentioned = parsed.edges.flatMap((edge) => edge.split(' : ')[0]!.split(' -> '));
  parsed.states.push(...new Set([...names.values(), ...mentioned, ...parsed.initial, ...parsed.finals]));
  return parsed;
}

function parseDot(text: string): Parsed {
  const lines = text.trimEnd().split('\n');
  expect(lines[0]).toBe('digraph "session" {');
  expect(lines.at(-1)).toBe('}');
  const parsed: Parsed = { initial: [], states: [], finals: [], edges: [] };
  for (const line of lines.slice(1, -1).map((raw) => raw.trim())) {
    if (/^(graph|node|edge) \[/.test(line)) continue;
    const edge = /^"([^"]+)" -> "([^"]+)"(?: \[label="([^"]*)"\])?;$/.exec(line);
    const node = /^"([^"]+)" \[(.*)\];$/.exec(line);
    if (edge?.[1] === '__initial__') parsed.initial.push(edge[2]!);
    else if (edge) parsed.edges.push(`${edge[1]} -> ${edge[2]} : ${edge[3]}`);
    else if (node?.[1] === '__initial__') expect(node[2]).toContain('shape=point');
    else if (node) {
      const [, id, attributes] = node as unknown as [string, string, string];
      parsed.states.push(id);
      if (attributes.includes('peripheries=2')) parsed.finals.push(id);
      const plain = /^label="([^"]+)"/.exec(attributes);
      const bold = /<b>([^<]+)<\/b>/.exec(attributes);
      expect(plain?.[1] ?? bold?.[1]).toBe(id);
      for (const row of attributes.matchAll(/<td align="left">([^<]+)<\/td>/g)) parsed.edges.push(`${id} : ${row[1]}`);
    } else throw new Error(`unexpected DOT line: ${line}`);
  }
  return parsed;
}

function expectSameChart(parsed: Parsed, expected: Expected): void {
  expect(parsed.initial).toEqual([expected.initial]);
  expect([...parsed.states].sort()).toEqual([...expected.states].sort());
  expect([...parsed.finals].sort()).toEqual([...expected.finals].sort());
  expect([...parsed.edges].sort()).toEqual([...expected.edges].sort());
}

const expected = expectedChart();

describe('the session chart, exported from the machine', () => {
  it('is derived from the chart the test walks on its own, which has the five states of DESIGN §4', () => {
    expect([...expected.states].sort()).toEqual(['awaiting-snapshot', 'connecting', 'disconnected', 'evicted', 'serving']);
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
      { kind: 'after', event: 'xstate.after.evictionGrace.session.disconnected', delay: 'evictionGrace', ms: DEFAULTS.evictionGrace },
    ]);
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
    expect(titles.filter((title) => title !== '__initial__').sort()).toEqual([...expected.states].sort());
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
    expect(mermaid).toContain('  state on {\n    state "light" as on_light\n');
    expect(mermaid).toContain('    --\n');
    expect(mermaid).toContain('      on_light_bright --> on_light_dim : after 500ms\n');
    expect(mermaid).toContain('      on_sound_mute --> on_sound_loud : always [noisy]\n');
    const dot = toDot(chart);
    expect(dot).toContain('subgraph "cluster_on.light" {');
    expect(dot).toContain('"off" -> "on.light.dim" [label="POWER [charged]", lhead="cluster_on"];');
    expect(dot).toContain('"on.light.dim" -> "done" [label="POWER", ltail="cluster_on"];');
  });
});
