export { fleetSessions, recordedSessions, type FleetSession } from './fleet-sessions.js';
export { SessionRecorder, type SessionRecorderOptions } from './session-recorder.js';
export { Pregeneration, storeGeneration, type CertificatesAhead, type PregenerationOptions } from './pregeneration.js';
export { SavedSessions } from './saved-sessions.js';
