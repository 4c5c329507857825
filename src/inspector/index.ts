import type { InspectOptions } from './inspect-options.js';
import type { SessionInspector } from './stately-inspector.js';

export { parseInspectorUrl, parseNodePattern, type InspectOptions } from './inspect-options.js';
export type { SessionInspector } from './stately-inspector.js';

/**
 * Connects to a Stately inspector relay and sends the sessions `options.nodes` chooses. The
 * inspector's WebSocket client and serializers are loaded only here, when inspection is asked for.
 */
export async function connectInspector(options: InspectOptions, instance: string): Promise<SessionInspector> {
  const { connectWebSocketInspector } = await import('./stately-inspector.js');
  return connectWebSocketInspector(options, instance);
}
