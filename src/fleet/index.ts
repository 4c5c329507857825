export { fleetSessions, recordedSessions, type FleetSession } from './fleet-sessions.js';
export { SessionRecorder, type SessionRecorderOptions } from './session-recorder.js';
export { Pregeneration, type PregenerationOptions } from './pregeneration.js';
