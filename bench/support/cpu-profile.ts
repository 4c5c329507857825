import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

/** One function's share of a CPU profile. */
export interface HotFunction {
  readonly name: string;
  /** `file:line`, relative to the repository or to node_modules. */
  readonly where: string;
  /** Self or inclusive time, by the list it is in. */
  readonly ms: number;
  readonly percent: number;
}

/** One part of the process (grpc-js, the session chart, encoding, GC …) and its share of a profile. */
export interface ProfileShare {
  readonly part: string;
  readonly ms: number;
  readonly percent: number;
}

/** One part of the process and the bytes it allocated in a phase, collected ones included. */
export interface AllocationShare {
  readonly part: string;
  readonly bytes: number;
  readonly percent: number;
}

/** The hottest functions of a phase, and where its full profile was written. */
export interface PhaseProfile {
  /** Self time summed per part of the process (PARTS), largest first. */
  readonly parts: readonly ProfileShare[];
  /** By time spent in the function itself. */
  readonly self: readonly HotFunction[];
  /** By time spent in the function and what it called. */
  readonly inclusive: readonly HotFunction[];
  /** A `.cpuprofile` file (open it in Chrome DevTools or speedscope). */
  readonly file: string;
  /**
   * With allocations sampled (`--alloc-prof`): bytes allocated by part, what the collector
   * already freed included (what it has to work through), largest first; the sampled profile is
   * written beside the CPU profile as a `.heapprofile` (Chrome DevTools, Memory tab).
   */
  readonly allocations?: readonly AllocationShare[];
}

interface HeapProfileNode {
  readonly callFrame: ProfileNode['callFrame'];
  readonly selfSize: number;
  readonly children: readonly HeapProfileNode[];
}

/** One sample per this many bytes allocated, on average (V8's default is 32 KB). */
const ALLOCATION_SAMPLING_BYTES = 8_192;

interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * The V8 sampling profiler of this process, started and stopped around one phase of a bench
 * (the connect storm, a change), so the hot functions are those of that phase alone.
 */
export class PhaseProfiler {
  readonly #session = new Session();
  #running = false;
  #allocations = false;

  /** `allocations`: also samples what is allocated (`--alloc-prof`), objects the collector freed included. */
  async start(options: { readonly allocations?: boolean } = {}): Promise<void> {
    if (this.#running) return;
    this.#session.connect();
    await this.#session.post('Profiler.enable');
    await this.#session.post('Profiler.setSamplingInterval', { interval: 200 });
    this.#allocations = options.allocations === true;
    if (this.#allocations) {
      await this.#session.post('HeapProfiler.startSampling', {
        samplingInterval: ALLOCATION_SAMPLING_BYTES,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    }
    await this.#session.post('Profiler.start');
    this.#running = true;
  }

  /** Stops, writes the profile to `file`, and returns the `top` functions by self and by inclusive time. */
  async stop(top: number, file: string): Promise<PhaseProfile> {
    if (!this.#running) return { parts: [], self: [], inclusive: [], file: '' };
    const { profile } = (await this.#session.post('Profiler.stop')) as unknown as { profile: Profile };
    await this.#session.post('Profiler.disable');
    let allocations: readonly AllocationShare[] | undefined;
    if (this.#allocations) {
      const { profile: sampled } = (await this.#session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapProfileNode } };
      await writeFile(file.replace(/\.cpuprofile$/, '.heapprofile'), JSON.stringify(sampled));
      allocations = allocationParts(sampled.head);
    }
    this.#session.disconnect();
    this.#running = false;
    await writeFile(file, JSON.stringify(profile));
    return { ...hotFunctions(profile, top), file, ...(allocations && { allocations }) };
  }
}

/**
 * The parts of the process a profile's time is told apart by, matched in order against a
 * function's file (relative to the repository or node_modules). Functions without a file (V8
 * builtins, native bindings) count to their caller's part.
 */
const PARTS: readonly (readonly [part: string, file: RegExp])[] = [
  ['grpc-js', /^@grpc\/grpc-js\//],
  ['Node HTTP/2', /^node:(internal\/)?http2/],
  ['Node sockets and streams', /^node:(net|internal\/(stream_base_commons|streams|net|tls|crypto))/],
  ['XState', /^xstate\//],
  ['session chart (src/machines)', /^src\/machines\//],
  ['session runtime (src/sessions)', /^src\/sessions\//],
  ['session records (src/fleet, store records)', /^src\/(fleet\/|store\/(sql-)?session-records)/],
  ['ledgers (src/xds/stream)', /^src\/xds\/(stream\/|resource-set\.ts)/],
  ['encoding', /^(src\/xds\/(encode|response-encoder|proto-json|content-hash|snapshot)\.ts|protobufjs\/|@protobufjs\/)/],
  ['decoding', /^src\/xds\/(decode|xds-request)\.ts/],
  ['xDS server (src/xds)', /^src\/xds\//],
  ['generation (src/mesh)', /^src\/mesh\//],
  ['store', /^(src\/store\/|@electric-sql\/|pg\/|pg-)/],
  ['logging (pino)', /^(pino|sonic-boom|thread-stream)/],
  ['metrics (prom-client)', /^(prom-client\/|src\/api\/metrics)/],
  ['API (fastify)', /^(fastify|@fastify|src\/api\/)/],
  ['bench probes', /^bench\//],
  ['other Node internals', /^node:/],
];

/** Where each sample's time goes, by part; the profiler's own pseudo-nodes are kept by name. */
function partOf(frame: ProfileNode['callFrame']): string | undefined {
  if (frame.url === '') {
    if (frame.functionName === '(garbage collector)') return 'GC';
    if (frame.functionName === '(program)') return 'V8 and native, unattributed';
    if (frame.functionName === '(idle)') return 'idle';
    return undefined;
  }
  const file = shortPath(frame.url);
  return PARTS.find(([, pattern]) => pattern.test(file))?.[0] ?? `other (${file.split('/')[0]})`;
}

function profileParts(profile: Profile, parentOf: ReadonlyMap<number, number>, byId: ReadonlyMap<number, ProfileNode>): ProfileShare[] {
  const partOfNode = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = partOfNode.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    const own = node ? partOf(node.callFrame) : undefined;
    const parent = parentOf.get(id);
    const part = own ?? (parent === undefined ? 'V8 and native, unattributed' : resolve(parent));
    partOfNode.set(id, part);
    return part;
  };
  const us = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const part = resolve(id);
    if (part === 'idle') return;
    const delta = profile.timeDeltas[i] ?? 0;
    total += delta;
    us.set(part, (us.get(part) ?? 0) + delta);
  });
  return [...us]
    .sort((a, b) => b[1] - a[1])
    .map(([part, time]) => ({ part, ms: time / 1000, percent: total === 0 ? 0 : (100 * time) / total }));
}

/** Bytes allocated per part; an allocation without a file of its own (a `new Set` in a builtin) counts to its caller's part. */
function allocationParts(head: HeapProfileNode): AllocationShare[] {
  const bytes = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapProfileNode, inherited: string) => {
    const part = partOf(node.callFrame) ?? inherited;
    bytes.set(part, (bytes.get(part) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child, part);
  };
  walk(head, 'V8 and native, unattributed');
  return [...bytes]
    .filter(([, size]) => size > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([part, size]) => ({ part, bytes: size, percent: total === 0 ? 0 : (100 * size) / total }));
}

function hotFunctions(profile: Profile, top: number): Pick<PhaseProfile, 'parts' | 'self' | 'inclusive'> {
  const byId = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const keyOf = new Map<number, { key: string; name: string; where: string }>();
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    const name = frame.functionName || '(anonymous)';
    // Columns too: tsx's output keeps each TypeScript file's code on few lines.
    const where = frame.url ? `${shortPath(frame.url)}:${frame.lineNumber + 1}:${(frame as { columnNumber?: number }).columnNumber ?? 0}` : '';
    keyOf.set(node.id, { key: `${name} ${where}`, name, where });
  }
  const self = new Map<string, { name: string; where: string; us: number }>();
  const inclusive = new Map<string, { name: string; where: string; us: number }>();
  const add = (into: typeof self, id: number, us: number) => {
    const frame = keyOf.get(id);
    if (!frame) return;
    const entry = into.get(frame.key) ?? { name: frame.name, where: frame.where, us: 0 };
    entry.us += us;
    into.set(frame.key, entry);
  };
  let total = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    add(self, id, us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const key = keyOf.get(at)?.key;
      if (key === undefined || seen.has(key)) continue;
      seen.add(key);
      add(inclusive, at, us);
    }
  });
  const rank = (entries: typeof self) =>
    [...entries.values()]
      .filter(({ name }) => name !== '(root)')
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(({ name, where, us }) => ({ name, where, ms: us / 1000, percent: total === 0 ? 0 : (100 * us) / total }));
  return { parts: profileParts(profile, parentOf, byId), self: rank(self), inclusive: rank(inclusive) };
}

function shortPath(url: string): string {
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  const modules = file.lastIndexOf('node_modules/');
  if (modules !== -1) return file.slice(modules + 'node_modules/'.length);
  return path.relative(process.cwd(), file);
}
