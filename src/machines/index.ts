export { isDataplaneGone } from './generation-failure.js';
export { isBehind, servedSnapshot, streamPhase, type Phase, type SessionContext, type SessionInput, type StreamPhase } from './session-context.js';
export { generationEvent, REQUEST_EVENTS, type CertificateInfo, type EndStatus, type Generate, type Generation, type GenerationFailure, type RequestEvent, type SessionEvent, type SessionEventType, type SessionIntent, type StreamInfo, type TypedRequest } from './session-events.js';
export { sessionMachine, sessionSetup, type SessionMachine } from './session-machine.js';
export { delayedEventOf, SESSION_STATES, sessionStateOf, stateIdOf, type SessionState, type SessionStateId } from './session-states.js';
export { lastResponseNacked, type SessionView, type TransitionRecord, type TypeStatus } from './session-view.js';
export { viewOf } from './session-view-of.js';
export { chartOf, type ChartOptions, type ChartState, type ChartTransition, type Statechart, type Trigger } from './statechart.js';
export { isStatechartFormat, renderStatechart, sessionStatechart, STATECHART_FORMATS, toDot, toMermaid, type StatechartFormat } from './statechart-formats.js';
