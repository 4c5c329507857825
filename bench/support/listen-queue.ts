import { readOr } from './machine-cpu.js';

/**
 * The kernel's accept-queue facts, from /proc (Linux; zero elsewhere). A listener's queue holds
 * at most `net.core.somaxconn` connections the process has not accepted yet; a handshake that
 * completes while it is full is dropped, and the client sends its SYN again after TCP's back-off
 * (1 s, 3 s, 7 s, 15 s …): in a connect storm those are the last nodes served.
 */
export interface ListenQueueCounters {
  /** Handshakes dropped because a listener's accept queue was full (TcpExt ListenOverflows), machine-wide. */
  readonly overflows: number;
  /** SYNs clients sent again (TcpExt TCPSynRetrans), machine-wide. */
  readonly synRetransmits: number;
}

export function sampleListenQueue(): ListenQueueCounters {
  const counters = tcpExt();
  return { overflows: counters.get('ListenOverflows') ?? 0, synRetransmits: counters.get('TCPSynRetrans') ?? 0 };
}

/** `net.core.somaxconn` and `net.ipv4.tcp_max_syn_backlog`, for the run's header. */
export function listenLimits(): string {
  const read = (name: string) => readOr(`/proc/sys/${name.replaceAll('.', '/')}`).trim() || '?';
  return `somaxconn ${read('net.core.somaxconn')}, tcp_max_syn_backlog ${read('net.ipv4.tcp_max_syn_backlog')}`;
}

function tcpExt(): Map<string, number> {
  const lines = readOr('/proc/net/netstat').split('\n');
  for (let i = 0; i + 1 < lines.length; i++) {
    const names = lines[i]!.split(/\s+/);
    const values = lines[i + 1]!.split(/\s+/);
    if (names[0] === 'TcpExt:' && values[0] === 'TcpExt:') return new Map(names.slice(1).map((name, at) => [name, Number(values[at + 1])]));
  }
  return new Map();
}
