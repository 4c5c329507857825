/**
 * What live inspection sends where: parsed from `--inspect` and `--inspect-nodes`. Kept apart
 * from the inspector itself so the command line can check them without loading it.
 */

/**
 * Live inspection of chosen sessions in Stately's inspector.
 *
 * @example
 * ```ts
 * createControlPlane({ inspect: { url: 'ws://localhost:8080', nodes: (node) => node === 'default.web-1' } });
 * ```
 */
export interface InspectOptions {
  /**
   * WebSocket URL of an inspector relay, such as `ws://localhost:8080` from
   * `createInspectorServer()` of `@statelyai/inspect/server`.
   */
  readonly url: string;
  /** The nodes whose sessions are sent; no other session is inspected. */
  readonly nodes: (node: string) => boolean;
}

/** A `ws://` or `wss://` URL, returned as given. */
export function parseInspectorUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`expected a WebSocket URL such as ws://localhost:8080; got "${text}"`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new Error(`expected a ws:// or wss:// URL; got "${text}"`);
  return text;
}

const PATTERN = /^[A-Za-z0-9._*-]+$/;

/**
 * Node ids matching any of a comma-separated list of patterns, in which `*` matches any run of
 * characters: `default.web-*,payments.ledger-1`. `*` alone chooses every node, which must be
 * asked for: at 10,000 sessions it floods the inspector.
 */
export function parseNodePattern(text: string): (node: string) => boolean {
  const patterns = text.split(',').map((pattern) => pattern.trim());
  for (const pattern of patterns) {
    if (!PATTERN.test(pattern)) {
      throw new Error(`expected node ids or patterns such as default.web-*, comma-separated (letters, digits, ".", "-", "_", "*"); got "${text}"`);
    }
  }
  const alternatives = patterns.map((pattern) => pattern.split('*').map(escapeRegExp).join('.*'));
  const matcher = new RegExp(`^(?:${alternatives.join('|')})$`);
  return (node) => matcher.test(node);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
