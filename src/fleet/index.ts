export { fleetSessions, recordedSessions, type FleetSession } from './fleet-sessions.js';
export { SessionRecorder, type SessionRecorderOptions } from './session-recorder.js';
