import type { Logger } from 'pino';
import { generate, nodeIdOf, type Dataplane, type GenerationInput, type Held, type NodeCertificate } from '../mesh/index.js';
import type { SessionScheduler } from '../sessions/index.js';

export interface PregenerationOptions {
  /** Generates `node`'s configuration from the store's current projection; what it returns is dropped. */
  readonly generate: (node: string) => void;
  /** Runs the generations in its `idle` lane: after everything else this instance has to do. */
  readonly scheduler: Pick<SessionScheduler, 'schedule'>;
  /** A monotonic clock in ms, for `first`'s budget: `performance.now` by default. */
  readonly now?: () => number;
  /** Told of each generation made ahead (the metrics count them). */
  readonly generated?: () => void;
}

/**
 * Generates the configuration of every dataplane in the store once per write of it, ahead of
 * its node connecting, while this instance has nothing else to do. The generator keeps a
 * dataplane's own listeners and clusters encoded for as long as the stored dataplane lives,
 * and a node arriving here for the first time (failing over from another instance, or moved by
 * a scale-out) is then answered from them instead of encoding them while the rest of its storm
 * waits: a failover of 5,000 nodes took a third less CPU (bench/README.md). The snapshots are
 * dropped; the cost is the encoded resources, about 2 KB a dataplane.
 */
export class Pregeneration {
  readonly #options: PregenerationOptions;
  /** Stored dataplanes generated, or listed to be: a new object is a new write. */
  readonly #listed = new WeakSet<Held<Dataplane>>();
  /** A mesh's dataplanes, as a map, once all its entries were listed: a mesh unchanged since is skipped whole. */
  readonly #seen = new WeakSet<ReadonlyMap<string, Held<Dataplane>>>();
  /** The newest projection not yet looked through; undefined when the last sweep saw the newest. */
  #latest: GenerationInput | undefined;
  #sweeping = false;
  /** Who waits for the sweeps to end (`idle`). */
  #waiting: (() => void)[] = [];

  constructor(options: PregenerationOptions) {
    this.#options = options;
  }

  /**
   * Generates, in the idle lane, the dataplanes of `projection` not generated since they were
   * written. A bulk apply makes a projection per batch of writes, each with its mesh's
   * dataplanes copied: they are looked through one sweep at a time, the newest each time, never
   * one listing per projection.
   */
  follow(projection: GenerationInput): void {
    this.#latest = projection;
    if (!this.#sweeping) this.#sweep();
  }

  /**
   * Generates the dataplanes of `projection` at once, for at most `budgetMs`, and the rest in the
   * idle lane: for an instance about to serve, whose fleet reconnects all at once (a restart),
   * every node generated now is one its storm does not generate cold.
   */
  first(projection: GenerationInput, budgetMs: number): void {
    const now = this.#options.now ?? (() => performance.now());
    const end = now() + budgetMs;
    const due = this.#list(projection);
    let next = 0;
    while (next < due.length && now() < end) this.#generate(due[next++]!);
    this.#schedule(due.slice(next));
  }

  /** Resolves once every dataplane listed so far is generated and no sweep is due. */
  idle(): Promise<void> {
    if (!this.#sweeping) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /**
   * Looks through the newest projection in the idle lane too: listing a mesh's dataplanes is a
   * walk over all of them, not to be made in the step that hands a change to the sessions.
   */
  #sweep(): void {
    this.#sweeping = true;
    this.#options.scheduler.schedule(
      [this],
      () => {
        const projection = this.#latest!;
        this.#latest = undefined;
        this.#schedule(this.#list(projection));
      },
      'idle',
    );
  }

  /** The nodes of `projection`'s dataplanes not generated or listed since they were written, marked listed. */
  #list(projection: GenerationInput): string[] {
    const due: string[] = [];
    for (const [mesh, { dataplanes }] of projection.meshes) {
      if (this.#seen.has(dataplanes)) continue;
      this.#seen.add(dataplanes);
      for (const [name, stored] of dataplanes) {
        if (this.#listed.has(stored)) continue;
        this.#listed.add(stored);
        due.push(nodeIdOf(mesh, name));
      }
    }
    return due;
  }

  #schedule(due: readonly string[]): void {
    const { scheduler } = this.#options;
    this.#sweeping = true;
    scheduler.schedule(due, (node) => this.#generate(node), 'idle');
    // After the sweep, in the same lane: the newest projection that arrived meanwhile, if any.
    scheduler.schedule(
      [this],
      () => {
        this.#sweeping = false;
        if (this.#latest !== undefined) return this.#sweep();
        const waiting = this.#waiting;
        this.#waiting = [];
        for (const resolve of waiting) resolve();
      },
      'idle',
    );
  }

  #generate(node: string): void {
    this.#options.generate(node);
    this.#options.generated?.();
  }
}

/** What pregeneration needs of the instance's certificates (the sessions' `CertificateKeeper`). */
export interface CertificatesAhead {
  /** Issues the node its certificate ahead, when its mesh has mTLS and it holds none. */
  issueAhead(node: string): void;
  /** The certificate issued ahead for the node, if any. */
  ahead(node: string): NodeCertificate | undefined;
}

/**
 * What an instance pregenerates with: in a mesh with mTLS the node's certificate first, then its
 * configuration with that certificate (signing and encoding its TLS resources are most of what
 * its first answer would cost), from the projection current when its turn comes (undefined once
 * the instance stopped: the scheduler still runs what was queued), the result dropped. A failure
 * is logged, not thrown: the scheduler's work must not throw, and the node's own session meets
 * the same error and reports it.
 */
export function storeGeneration(projection: () => GenerationInput | undefined, certificates: CertificatesAhead, logger: Logger): (node: string) => void {
  return (node) => {
    const current = projection();
    if (current === undefined) return;
    try {
      certificates.issueAhead(node);
      generate(node, current, certificates.ahead(node));
    } catch (error) {
      logger.warn({ err: error, node }, 'generating ahead of the node failed');
    }
  };
}
