import { compareText } from '../common/index.js';

/**
 * Which instance serves which node, kept in the store so that every instance can show the
 * whole fleet (issue 4). Records are written in batches by each instance for its own sessions
 * (src/fleet/session-recorder.ts); an instance that stops saving is dead once `ttl` passes,
 * and its records expire with it. The store keeps a record's body as opaque JSON: what a
 * session looks like is the session registry's business, not the store's.
 */

/** What an instance saves about one of its sessions. */
export interface SessionRecordInput {
  readonly node: string;
  readonly state: string;
  /** ISO 8601: since when this instance has served the node (its stream opened). */
  readonly since: string;
  readonly body: unknown;
  /**
   * The session's recent story (its transitions), saved only when it changed: the ACKs that
   * follow every push change the body alone. Absent keeps the story saved before.
   */
  readonly story?: unknown;
}

/** A saved record, as any instance reads it back. */
export interface SessionRecord extends SessionRecordInput {
  readonly instance: string;
  /** ISO 8601, the store's clock: when the instance last saved this record. */
  readonly updatedAt: string;
}

/** An instance that saved within the last `ttl`. */
export interface InstanceRecord {
  readonly id: string;
  readonly xds: string;
  readonly api?: string;
  /** ISO 8601. */
  readonly startedAt: string;
  /** ISO 8601, the store's clock: its last save. */
  readonly seenAt: string;
}

/** One save of one instance: changed records, nodes it no longer serves, and its heartbeat. */
export interface SessionRecordBatch {
  readonly instance: Omit<InstanceRecord, 'seenAt'>;
  readonly upserts: readonly SessionRecordInput[];
  /** Nodes this instance evicted: only its own records of them are removed. */
  readonly removals: readonly string[];
}

export interface SessionRecords {
  /**
   * Saves a batch atomically and marks the instance alive. Resolves true when the instance
   * joined: the store had no row for it (its first save, or it was expired while it could not
   * save), or the row of an earlier process with the same id and another `startedAt` (a
   * restart), whose records are then deleted. The caller must then save every session it has.
   */
  save(batch: SessionRecordBatch): Promise<boolean>;
  /** Records of instances seen within `ttl` ms, sorted by node then instance; one node's with `node`. */
  list(ttl: number, node?: string): Promise<readonly SessionRecord[]>;
  /** Instances seen within `ttl` ms, sorted by id. */
  instances(ttl: number): Promise<readonly InstanceRecord[]>;
  /** Deletes instances not seen within `ttl` ms, with their records; resolves with how many. */
  expire(ttl: number): Promise<number>;
  /** Deletes an instance and its records: it stopped cleanly. */
  leave(instance: string): Promise<void>;
}

interface MemoryInstance {
  info: Omit<InstanceRecord, 'seenAt'>;
  seenAt: number;
  readonly records: Map<string, SessionRecord>;
}

/** Session records of the memory store: shared by control planes that share one `MemoryEventLog`. */
export class MemorySessionRecords implements SessionRecords {
  readonly #now: () => Date;
  readonly #instances = new Map<string, MemoryInstance>();

  constructor(now: () => Date) {
    this.#now = now;
  }

  async save({ instance, upserts, removals }: SessionRecordBatch): Promise<boolean> {
    const now = this.#now();
    const known = this.#instances.get(instance.id);
    const joined = known?.info.startedAt !== instance.startedAt;
    const entry: MemoryInstance = known && !joined ? known : { info: instance, seenAt: now.getTime(), records: new Map() };
    entry.info = instance;
    entry.seenAt = now.getTime();
    this.#instances.set(instance.id, entry);
    const updatedAt = now.toISOString();
    for (const record of upserts) {
      const story = record.story ?? entry.records.get(record.node)?.story;
      entry.records.set(record.node, { ...record, instance: instance.id, updatedAt, ...(story !== undefined && { story }) });
    }
    for (const node of removals) entry.records.delete(node);
    return joined;
  }

  async list(ttl: number, node?: string): Promise<readonly SessionRecord[]> {
    const records = this.#live(ttl).flatMap((entry) =>
      node === undefined ? [...entry.records.values()] : [entry.records.get(node)].filter((record) => record !== undefined),
    );
    return records.sort((a, b) => compareText(a.node, b.node) || compareText(a.instance, b.instance));
  }

  async instances(ttl: number): Promise<readonly InstanceRecord[]> {
    return this.#live(ttl)
      .map((entry) => ({ ...entry.info, seenAt: new Date(entry.seenAt).toISOString() }))
      .sort((a, b) => compareText(a.id, b.id));
  }

  async expire(ttl: number): Promise<number> {
    const cutoff = this.#now().getTime() - ttl;
    let expired = 0;
    for (const [id, entry] of this.#instances) {
      if (entry.seenAt >= cutoff) continue;
      this.#instances.delete(id);
      expired++;
    }
    return expired;
  }

  async leave(instance: string): Promise<void> {
    this.#instances.delete(instance);
  }

  #live(ttl: number): MemoryInstance[] {
    const cutoff = this.#now().getTime() - ttl;
    return [...this.#instances.values()].filter((entry) => entry.seenAt >= cutoff);
  }
}

