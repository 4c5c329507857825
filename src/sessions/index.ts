export { combineCallbacks, type SessionCallbacks } from './session-callbacks.js';
export type { Session } from './live-session.js';
export { SessionRegistry, type CertificateIssuer, type SessionRegistryOptions } from './session-registry.js';
export { CertificateKeeper, type CertificateKeeperOptions } from './certificate-keeper.js';
export { SessionScheduler, type Lane, type SessionSchedulerOptions } from './session-scheduler.js';
export { SessionViews, type LastSent, type SessionBrief, type SessionPage, type SessionSummary } from './session-views.js';
export { SessionWatch, type SessionListener } from './session-watch.js';
export { clientStatuses } from './client-statuses.js';
export { TlsStatusWriter, type TlsStatusWriterOptions } from './tls-status-writer.js';
