/** A `host:port` address as typed by a user: the host as written (`[::1]` keeps its brackets). */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** The rule `parseHostPort` checks, for error messages. */
export const HOST_PORT_RULE = 'host:port, such as 127.0.0.1:5678 or [::1]:5678';

/** Reads `host:port` (`[::1]:5681` for IPv6); port 0 is allowed (the OS chooses). Undefined if it is not one. */
export function parseHostPort(text: string): HostPort | undefined {
  const match = HOST_PORT.exec(text);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  const port = Number(match[2]);
  return port > 65_535 ? undefined : { host: match[1], port };
}

/** The host without IPv6 brackets: what a socket address field wants. */
export function bareHost(host: string): string {
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

/**
 * An address a client on this machine can dial for one bound on `host`: a server bound on
 * every interface (`0.0.0.0`, `[::]`) is reached on loopback.
 */
export function dialable({ host, port }: HostPort): HostPort {
  if (host === '0.0.0.0') return { host: '127.0.0.1', port };
  if (host === '[::]') return { host: '[::1]', port };
  return { host, port };
}

export function formatHostPort({ host, port }: HostPort): string {
  return `${host}:${port}`;
}

/** Whether a host is this machine only: `localhost`, 127.0.0.0/8 or `::1` (brackets or not). */
export function isLoopback(host: string): boolean {
  const bare = bareHost(host).toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}
