export { type ApiBackend, type MetricsSource, sessionsOf } from './api-backend.js';
export { type ApiErrorCode, ERROR_STATUS, type ErrorBody, errorResponse } from './error-response.js';
export * from './errors.js';
export { type ApiServer, type ApiServerOptions, createApiServer, DEFAULT_BODY_LIMIT } from './http-server.js';
export { EVENTS_PAGE, type EventJson, type EventsPage, type HistoryPage } from './history-routes.js';
export { aggregateMetrics, ControlPlaneMetrics, type ControlPlaneMetricsOptions, type SessionCensus } from './metrics.js';
export type { FleetSessionHistory, SessionHistory } from './session-history-routes.js';
export { WRITE_HEADERS } from './resource-routes.js';
export type { ChangeAnswer } from './change-routes.js';
