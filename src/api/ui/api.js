// The session API and its live feed, as the pages use them.

/** GET a JSON resource; resolves with the status and the parsed body (an error body for 4xx/5xx). */
export async function getJson(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  return { status: response.status, body: await response.json() };
}

/** GET text, such as the state chart's SVG; undefined when the server has none. */
export async function getText(path) {
  const response = await fetch(path);
  return response.ok ? response.text() : undefined;
}

let instanceId;

/** The id of the instance serving this page, as `GET /instances` names it (`self`); undefined when that fails. */
export async function thisInstance() {
  if (instanceId !== undefined) return instanceId;
  const instances = await getJson('/instances');
  instanceId = instances.status === 200 ? instances.body.self : undefined;
  return instanceId;
}

/**
 * Subscribes to `GET /sessions/events` (for one node when `node` is given). `onOpen` runs on
 * every (re)connect: whatever happened while disconnected was missed, so the page refetches.
 * Returns the unsubscribe.
 */
export function openFeed({ node, onOpen, onViews, onView, onResync, onDown }) {
  const source = new EventSource(node === undefined ? '/sessions/events' : `/sessions/events?node=${encodeURIComponent(node)}`);
  source.addEventListener('open', () => onOpen());
  source.addEventListener('error', () => onDown());
  source.addEventListener('sessions', (event) => onViews?.(JSON.parse(event.data).views));
  source.addEventListener('session', (event) => onView?.(JSON.parse(event.data)));
  source.addEventListener('resync', () => onResync());
  return () => source.close();
}
