// The session API and its live feed, as the pages use them.

/** Where this tab keeps the API token it was given: gone when the tab closes. */
const TOKEN_KEY = 'chancery.apiToken';

/**
 * A GET with the tab's API token, if it has one. An API that asks for a token (401) gets one
 * from the user, once, and the request is sent again with it.
 */
async function get(path, headers = {}) {
  const send = () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return fetch(path, { headers: { ...headers, ...(token && { authorization: `Bearer ${token}` }) } });
  };
  const response = await send();
  if (response.status !== 401) return response;
  // Asked once per page load: the requests refused together wait for the one answer.
  asked ??= Promise.resolve(askForToken());
  return (await asked) ? send() : response;
}

let asked;

function askForToken() {
  const token = window.prompt('This Chancery asks for an API token (a reader token is enough):')?.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  return Boolean(token);
}

/** GET a JSON resource; resolves with the status and the parsed body (an error body for 4xx/5xx). */
export async function getJson(path) {
  const response = await get(path, { accept: 'application/json' });
  return { status: response.status, body: await response.json() };
}

/** GET text, such as the state chart's SVG; undefined when the server has none. */
export async function getText(path) {
  const response = await get(path);
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
  let source;
  let retry;
  const connect = () => {
    const query = new URLSearchParams(node === undefined ? {} : { node });
    // An EventSource cannot send headers: the feed takes the token as access_token (RFC 6750 §2.3).
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) query.set('access_token', token);
    source = new EventSource(`/sessions/events${query.size === 0 ? '' : `?${query}`}`);
    source.addEventListener('open', () => onOpen());
    source.addEventListener('error', () => {
      onDown();
      // A refusal (401 before a token was given) closes it for good; try again, with the token by then.
      if (source.readyState === EventSource.CLOSED) retry = setTimeout(connect, RECONNECT_MS);
    });
    source.addEventListener('sessions', (event) => onViews?.(JSON.parse(event.data).views));
    source.addEventListener('session', (event) => onView?.(JSON.parse(event.data)));
    source.addEventListener('resync', () => onResync());
  };
  connect();
  return () => {
    clearTimeout(retry);
    source.close();
  };
}

/** How long after the feed was refused it is opened again. */
const RECONNECT_MS = 2000;
