import type { AnyStateMachine, AnyStateNode, ContextFrom } from 'xstate';

/**
 * A state chart as plain, serialisable data: what `chancery statechart --format json` and
 * `GET /statechart` answer, and the only input of the Mermaid, DOT and SVG renderings.
 * It is derived from a machine by `chartOf`, so it cannot drift from the code.
 */
export interface Statechart {
  /** The machine's id, e.g. `session`. */
  readonly id: string;
  /** The id of the state the machine starts in. */
  readonly initial: string;
  /** Every state below the machine's root, parents before their children, in document order. */
  readonly states: readonly ChartState[];
  /** Every transition, grouped by source state in document order. */
  readonly transitions: readonly ChartTransition[];
}

export interface ChartState {
  /** The state's own id when it has one, else its path below the root joined by `.` (`parent.child`). */
  readonly id: string;
  readonly key: string;
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** The id of the enclosing state; absent at the top level. */
  readonly parent?: string;
  /** For a compound state, the id of the child it starts in. */
  readonly initial?: string;
  /**
   * Events it raises on entry and takes within the same step (`meta.raises`): a move the story
   * records under the event that started the step may have gone on by them.
   */
  readonly raises?: readonly string[];
}

export interface ChartTransition {
  readonly source: string;
  /**
   * The ids of the states it goes to; empty for a transition that only runs actions and
   * stays where it is without leaving the state.
   */
  readonly targets: readonly string[];
  readonly trigger: Trigger;
  /** The guard's name; absent when the transition is unguarded. */
  readonly guard?: string;
  /** A transition back into its own source state that exits and re-enters it (entry actions run again). */
  readonly reenter?: true;
}

export type Trigger =
  | { readonly kind: 'event'; readonly event: string }
  | {
      readonly kind: 'after';
      /** The event type XState schedules, `xstate.after.<delay>.<state id>`: what a session's history records. */
      readonly event: string;
      /** The named delay, or the number of ms written inline. */
      readonly delay: string | number;
      /** The delay in ms, when it could be resolved. */
      readonly ms?: number;
    }
  | { readonly kind: 'always' };

export interface ChartOptions<TMachine extends AnyStateMachine> {
  /**
   * The context delay expressions are evaluated against (`({ context }) => context.grace`).
   * Without it, a delay that is not a constant has no `ms`.
   */
  readonly context?: ContextFrom<TMachine>;
}

type TransitionDefinition = AnyStateNode['on'][string][number];

/**
 * Walks `machine.root` into a `Statechart`: every state with its type and initial child,
 * every transition with its event (or delay, or `always`), guard and targets.
 *
 * @example
 * const chart = chartOf(sessionMachine, { context });
 * chart.transitions.filter((t) => t.source === 'serving');
 */
export function chartOf<TMachine extends AnyStateMachine>(machine: TMachine, options: ChartOptions<TMachine> = {}): Statechart {
  const { root } = machine;
  if (root.transitions.size > 0 || root.always !== undefined) {
    // No chart drawing has a place for them; refusing beats drawing a chart without them.
    throw new Error(`machine ${machine.id} has transitions on its root, which a chart cannot show`);
  }
  const states: ChartState[] = [];
  const transitions: ChartTransition[] = [];
  const visit = (node: AnyStateNode): void => {
    states.push(stateOf(node));
    transitions.push(...transitionsOf(machine, node, options.context));
    for (const child of Object.values(node.states)) visit(child);
  };
  for (const child of Object.values(root.states)) visit(child);
  return { id: machine.id, initial: initialOf(root) ?? '', states, transitions };
}

function raisedOn(node: AnyStateNode): string[] | undefined {
  const raises: unknown = (node.meta as { raises?: unknown } | undefined)?.raises;
  return Array.isArray(raises) ? raises.filter((event): event is string => typeof event === 'string') : undefined;
}

function stateOf(node: AnyStateNode): ChartState {
  const parent = node.parent && node.parent.parent ? idOf(node.parent) : undefined;
  const initial = node.type === 'compound' ? initialOf(node) : undefined;
  const raises = raisedOn(node);
  return {
    id: idOf(node),
    key: node.key,
    type: node.type,
    ...(parent !== undefined && { parent }),
    ...(initial !== undefined && { initial }),
    ...(raises !== undefined && { raises }),
  };
}

function transitionsOf(machine: AnyStateMachine, node: AnyStateNode, context: unknown): ChartTransition[] {
  const delays = new Map(node.after.map((delayed) => [delayed.eventType, delayed.delay]));
  const out: ChartTransition[] = [];
  for (const [event, definitions] of node.transitions) {
    const delay = delays.get(event);
    const trigger: Trigger =
      delay === undefined ? { kind: 'event', event } : { kind: 'after', event, ...delayOf(machine, delay, context) };
    for (const definition of definitions) out.push(transitionOf(node, trigger, definition));
  }
  for (const definition of node.always ?? []) out.push(transitionOf(node, { kind: 'always' }, definition));
  return out;
}

function transitionOf(node: AnyStateNode, trigger: Trigger, definition: TransitionDefinition): ChartTransition {
  const guard = guardName(definition.guard);
  return {
    source: idOf(node),
    targets: (definition.target ?? []).map(idOf),
    trigger,
    ...(guard !== undefined && { guard }),
    ...(definition.reenter && { reenter: true as const }),
  };
}

type Delay = AnyStateNode['after'][number]['delay'];

function delayOf(machine: AnyStateMachine, delay: Delay, context: unknown): { delay: string | number; ms?: number } {
  if (typeof delay === 'number') return { delay, ms: delay };
  const config: unknown = typeof delay === 'string' ? machine.implementations.delays[delay] : delay;
  const name = typeof delay === 'string' ? delay : delay.name || 'inline';
  if (typeof config === 'number') return { delay: name, ms: config };
  if (typeof config === 'function' && context !== undefined) {
    const ms: unknown = config({ context, event: { type: 'xstate.init' } }, undefined);
    if (typeof ms === 'number') return { delay: name, ms };
  }
  return { delay: name };
}

/** A guard as written: a name, `{ type, params }`, or an inline function (named after it when it has a name). */
function guardName(guard: TransitionDefinition['guard']): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'inline';
  return String(guard.type);
}

function initialOf(node: AnyStateNode): string | undefined {
  const [target] = node.initial.target;
  return target && idOf(target);
}

/** A state's own `id` when the machine gives it one (`serving`), else its path below the root (`parent.child`). */
function idOf(node: AnyStateNode): string {
  const path = node.path.join('.');
  return node.id === `${node.machine.id}.${path}` ? path : node.id;
}
