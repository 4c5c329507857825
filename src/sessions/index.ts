export { combineCallbacks, type SessionCallbacks } from './session-callbacks.js';
export type { Session } from './live-session.js';
export { SessionRegistry, type SessionRegistryOptions } from './session-registry.js';
export { SessionScheduler, type Lane, type SessionSchedulerOptions } from './session-scheduler.js';
export { SessionViews, type LastSent, type SessionBrief, type SessionPage, type SessionSummary } from './session-views.js';
export { SessionWatch, type SessionListener } from './session-watch.js';
export { clientStatuses } from './client-statuses.js';
