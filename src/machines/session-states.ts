import type { AnyStateNode, StateValueFrom } from 'xstate';
import { sessionMachine, type SessionMachine } from './session-machine.js';

type Value = StateValueFrom<SessionMachine>;

/** The state that only groups others to share their transitions (`meta.groups` in the chart). */
type Grouping = 'streaming';
type Named<V> = V extends string ? V : keyof V & string;
type Leaves<V> = V extends string ? V : { [K in keyof V]-?: Leaves<NonNullable<V[K]>> }[keyof V];
/** States with children: XState's value type names them on their own too, as partial values. */
type Parents<V> = V extends object ? { [K in keyof V]-?: K | Parents<NonNullable<V[K]>> }[keyof V] : never;

/**
 * A session's state as DESIGN §4 names it: each state of the chart's top level, with a grouping
 * state (`streaming`) replaced by its children. What `GET /sessions?state=`, the metrics and
 * the UI count by.
 */
export type SessionState = Exclude<Extract<Value, string>, Grouping> | Named<NonNullable<Extract<Value, object>[Grouping]>>;

/** The chart state a session rests in: its state, or a step of it (`catching-up` within `awaiting-snapshot`). */
export type SessionStateId = Exclude<Leaves<Value>, Parents<Value>>;

function isGrouping(node: AnyStateNode): boolean {
  return node.meta !== undefined && 'groups' in (node.meta as object);
}

const principal = Object.values(sessionMachine.root.states).flatMap((node) => (isGrouping(node) ? Object.values(node.states) : [node]));

/** Every session state, in the chart's order: the one list metrics, API filters and the UI use. */
export const SESSION_STATES = principal.map((node) => node.key) as readonly SessionState[];

/** The session state each resting state belongs to. */
const STATE_OF: ReadonlyMap<string, SessionState> = new Map(
  principal.flatMap((node) => leavesOf(node).map((leaf) => [leaf.key, node.key as SessionState] as const)),
);

function leavesOf(node: AnyStateNode): AnyStateNode[] {
  const children = Object.values(node.states);
  return children.length === 0 ? [node] : children.flatMap(leavesOf);
}

/** The resting state of a snapshot's value: its deepest state. */
export function stateIdOf(value: Value): SessionStateId {
  let current: unknown = value;
  while (typeof current === 'object' && current !== null) current = Object.values(current)[0];
  return current as SessionStateId;
}

/** The session state a resting state belongs to. */
export function sessionStateOf(id: SessionStateId): SessionState {
  const state = STATE_OF.get(id);
  if (state === undefined) throw new Error(`state ${id} is not a resting state of the session chart`);
  return state;
}

/**
 * The event XState sends a session resting in `id` when a delay of the chart runs out
 * (`xstate.after.evictionGrace.disconnected`); undefined for a state without one. A timer is
 * the only cause of a move that no event sent to the actor explains.
 */
export function delayedEventOf(id: SessionStateId): string | undefined {
  return sessionMachine.getStateNodeById(id).after[0]?.eventType;
}
