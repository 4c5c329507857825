import { instance, type Viz } from '@viz-js/viz';
import { initialTransition } from 'xstate';
import { DEFAULTS } from '../defaults.js';
import { sessionMachine } from './session-machine.js';
import { type ChartState, type ChartTransition, chartOf, type Statechart } from './statechart.js';

/** Every format the session chart can be exported in; `json` is the `Statechart` model itself. */
export const STATECHART_FORMATS = ['mermaid', 'dot', 'svg', 'json'] as const;
export type StatechartFormat = (typeof STATECHART_FORMATS)[number];

/** The charts walked so far, by eviction grace: the delay that reads a session's context. */
const sessionCharts = new Map<number, Statechart>();
let viz: Promise<Viz> | undefined;
/** Renderings so far, by `<format>:<eviction grace>`. */
const rendered = new Map<string, Promise<string>>();

export function isStatechartFormat(text: string): text is StatechartFormat {
  return (STATECHART_FORMATS as readonly string[]).includes(text);
}

/** How a transition reads on an edge: `stream.opened [validNode]`, `after 10000ms (evictionGrace)`. */
function transitionLabel(transition: ChartTransition): string {
  const { trigger, guard } = transition;
  const on =
    trigger.kind === 'event'
      ? trigger.event
      : trigger.kind === 'always'
        ? 'always'
        : trigger.ms === undefined
          ? `after ${trigger.delay}`
          : `after ${trigger.ms}ms${typeof trigger.delay === 'string' ? ` (${trigger.delay})` : ''}`;
  return guard === undefined ? on : `${on} [${guard}]`;
}

/**
 * The chart as a Mermaid `stateDiagram-v2`: first every state inside its parent's block, by
 * name, with each block's start and final states, then every transition, so no edge names a
 * state before Mermaid knows where it lives. A transition that stays in its state without
 * re-entering it is written inside the state (`serving : xds.acked [currentStream]`), as UML
 * draws internal transitions, rather than as a self-loop.
 */
export function toMermaid(chart: Statechart): string {
  const lines = ['stateDiagram-v2', '  direction LR'];
  const declare = (parent: string | undefined, indent: string): void => {
    const start = initialIn(chart, parent);
    const children = childrenOf(chart, parent);
    children.forEach((state, index) => {
      // Regions of a parallel state are separated by `--`.
      if (index > 0 && isParallel(chart, parent)) lines.push(`${indent}--`);
      const id = mermaidId(state.id);
      if (id !== state.key) lines.push(`${indent}state "${state.key}" as ${id}`);
      else if (!isComposite(state)) lines.push(`${indent}${id}`);
      if (isComposite(state)) {
        lines.push(`${indent}state ${id} {`);
        declare(state.id, `${indent}  `);
        lines.push(`${indent}}`);
      }
    });
    if (start !== undefined) lines.push(`${indent}[*] --> ${mermaidId(start)}`);
    for (const state of children) if (state.type === 'final') lines.push(`${indent}${mermaidId(state.id)} --> [*]`);
  };
  declare(undefined, '  ');
  for (const transition of chart.transitions) {
    const id = mermaidId(transition.source);
    const label = mermaidText(transitionLabel(transition));
    if (transition.targets.length === 0) lines.push(`  ${id} : ${label}`);
    for (const target of transition.targets) lines.push(`  ${id} --> ${mermaidId(target)} : ${label}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The chart as Graphviz DOT. Each state is a node whose id is the state's id (`serving`), so
 * its SVG group carries `<title>serving</title>`; a compound state is a cluster around its
 * children, whose SVG group is titled `cluster_<id>`; the final state has a double border.
 * Internal transitions are listed inside the state's box or cluster label, below its name.
 */
export function toDot(chart: Statechart): string {
  const lines = [
    `digraph ${dotId(chart.id)} {`,
    '  graph [rankdir=LR, compound=true, fontname="Helvetica", fontsize=11];',
    '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  const write = (parent: string | undefined, indent: string): void => {
    const start = initialIn(chart, parent);
    if (start !== undefined) {
      const pseudo = parent === undefined ? '__initial__' : `__initial__.${parent}`;
      lines.push(`${indent}${dotId(pseudo)} [shape=point, width=0.12, label=""];`);
      lines.push(`${indent}${dotEdge(chart, pseudo, start)}`);
    }
    for (const state of childrenOf(chart, parent)) {
      const internal = transitionsFrom(chart, state).filter((transition) => transition.targets.length === 0);
      if (isComposite(state)) {
        lines.push(`${indent}subgraph ${dotId(`cluster_${state.id}`)} {`, `${indent}  label=${nodeLabel(state, internal)}; style=rounded;`);
        write(state.id, `${indent}  `);
        lines.push(`${indent}}`);
        continue;
      }
      const final = state.type === 'final' ? ', peripheries=2' : '';
      lines.push(`${indent}${dotId(state.id)} [label=${nodeLabel(state, internal)}${final}];`);
    }
  };
  write(undefined, '  ');
  chart.transitions.forEach((transition, index) => {
    // `t<n>` is the SVG group's id: the n-th transition of the JSON chart, whatever leaves it is drawn between.
    for (const target of transition.targets) {
      lines.push(`  ${dotEdge(chart, transition.source, target, transitionLabel(transition), `t${index}`)}`);
    }
  });
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/**
 * The session chart, its eviction delay shown as `evictionGrace` ms (`chancery run
 * --eviction-grace`, default 10 s): walked from `sessionMachine` once per grace, on first use.
 */
export function sessionStatechart(evictionGrace: number = DEFAULTS.evictionGrace): Statechart {
  let chart = sessionCharts.get(evictionGrace);
  if (chart === undefined) {
    const input = { node: 'default.chart', evictionGrace };
    chart = chartOf(sessionMachine, { context: initialTransition(sessionMachine, input)[0].context });
    sessionCharts.set(evictionGrace, chart);
  }
  return chart;
}

/**
 * The session chart in `format`. SVG is the DOT rendering laid out by Graphviz compiled to
 * WebAssembly, in process: no network, no browser. Each format is rendered once.
 *
 * @example
 * process.stdout.write(await renderStatechart('mermaid'));
 */
export function renderStatechart(format: StatechartFormat, evictionGrace: number = DEFAULTS.evictionGrace): Promise<string> {
  const key = `${format}:${evictionGrace}`;
  let text = rendered.get(key);
  if (text === undefined) {
    text = render(format, evictionGrace);
    rendered.set(key, text);
    // A failed rendering (a Graphviz bug) is tried again next time rather than remembered.
    text.catch(() => rendered.delete(key));
  }
  return text;
}

async function render(format: StatechartFormat, evictionGrace: number): Promise<string> {
  const chart = sessionStatechart(evictionGrace);
  switch (format) {
    case 'json':
      return `${JSON.stringify(chart, null, 2)}\n`;
    case 'mermaid':
      return toMermaid(chart);
    case 'dot':
      return toDot(chart);
    case 'svg':
      viz ??= instance();
      return (await viz).renderString(toDot(chart), { format: 'svg' });
  }
}

/** A node's label: its name, and below a rule the transitions it handles without leaving. */
function nodeLabel(state: ChartState, internal: readonly ChartTransition[]): string {
  if (internal.length === 0) return dotId(state.key);
  const rows = internal.map((transition) => `<tr><td align="left">${html(transitionLabel(transition))}</td></tr>`).join('');
  return `<<table border="0" cellborder="0" cellspacing="0" cellpadding="2"><tr><td><b>${html(state.key)}</b></td></tr><hr/>${rows}</table>>`;
}

/** A DOT edge; one to or from a cluster is drawn to its initial leaf and clipped at its border. */
function dotEdge(chart: Statechart, from: string, to: string, label?: string, id?: string): string {
  const tail = leafOf(chart, from);
  const head = leafOf(chart, to);
  const attributes = [
    ...(label === undefined ? [] : [`label=${dotId(label)}`]),
    ...(id === undefined ? [] : [`id=${dotId(id)}`]),
    ...(tail === from ? [] : [`ltail=${dotId(`cluster_${from}`)}`]),
    ...(head === to ? [] : [`lhead=${dotId(`cluster_${to}`)}`]),
  ];
  return `${dotId(tail)} -> ${dotId(head)}${attributes.length === 0 ? '' : ` [${attributes.join(', ')}]`};`;
}

/** The state an edge to `id` is drawn to: `id` itself, or the leaf a compound state starts in. */
function leafOf(chart: Statechart, id: string): string {
  const state = chart.states.find((candidate) => candidate.id === id);
  if (state === undefined || !isComposite(state)) return id;
  const first = state.initial ?? childrenOf(chart, id)[0]?.id;
  return first === undefined ? id : leafOf(chart, first);
}

/** Where `parent` (the whole chart when undefined) starts; a parallel state has no one start. */
function initialIn(chart: Statechart, parent: string | undefined): string | undefined {
  return parent === undefined ? chart.initial : chart.states.find((state) => state.id === parent)?.initial;
}

function isComposite(state: ChartState): boolean {
  return state.type === 'compound' || state.type === 'parallel';
}

function childrenOf(chart: Statechart, parent: string | undefined): ChartState[] {
  return chart.states.filter((state) => state.parent === parent);
}

function transitionsFrom(chart: Statechart, state: ChartState): ChartTransition[] {
  return chart.transitions.filter((transition) => transition.source === state.id);
}

function isParallel(chart: Statechart, id: string | undefined): boolean {
  return id !== undefined && chart.states.some((state) => state.id === id && state.type === 'parallel');
}

/** Mermaid state ids are word characters; others become `_` and the key is shown as the label. */
function mermaidId(id: string): string {
  return id.replace(/\W/g, '_');
}

/** Mermaid ends a statement at `;` and reads `#` as the start of an entity. */
function mermaidText(text: string): string {
  return text.replace(/#/g, '#35;').replace(/;/g, '#59;');
}

function dotId(text: string): string {
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}

function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
