import { filter, firstValueFrom, NEVER, Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ChangeFeed } from '../../src/store/change-feed.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { asSeq, type Projection } from '../../src/store/types.js';
import { author, mesh } from './fixtures.js';
import { ScriptedLog } from './scripted-log.js';

function collect(feed: ChangeFeed): number[] {
  const revisions: number[] = [];
  feed.projections.subscribe((projection) => revisions.push(projection.revision));
  return revisions;
}

function reached(feed: ChangeFeed, revision: number): Promise<Projection> {
  return firstValueFrom(feed.projections.pipe(filter((projection) => projection.revision >= revision)));
}

describe('ChangeFeed', () => {
  it('reads the whole log in pages on start and emits once, at its end', async () => {
    const log = new ScriptedLog();
    for (const name of ['a', 'b', 'c', 'd', 'e']) await log.append([{ kind: 'upserted', resource: mesh(name) }], author);
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 2 });
    const revisions = collect(feed);
    await feed.start();
    expect(log.reads).toBe(3);
    expect(revisions).toEqual([5]);
    expect(feed.projection.meshes.size).toBe(5);
    await feed.stop();
  });

  it('emits nothing for an empty log', async () => {
    const feed = new ChangeFeed(new ScriptedLog(), { resync: NEVER, pageSize: 10 });
    const revisions = collect(feed);
    await feed.start();
    expect(feed.projection.revision).toBe(0);
    expect(revisions).toEqual([]);
    await feed.stop();
  });

  it('answers refresh() after the first read that started after the call, not after every read later calls add', async () => {
    const log = new ScriptedLog({ loseWakeups: true });
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 10 });
    await feed.start();
    await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    const settled: string[] = [];
    const track = (name: string, refresh: Promise<Projection>) => refresh.then((projection) => settled.push(`${name}@${projection.revision}`));

    const releaseFirst = log.hold();
    const reading = firstValueFrom(log.readStarted);
    const first = track('first', feed.refresh());
    await reading;
    // Written while the first read is in flight: only a read that starts later can see it.
    await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
    const second = track('second', feed.refresh());
    releaseFirst();
    // Holds the second read (which starts as soon as the first ends) until released.
    const releaseSecond = log.hold();
    await first;
    expect(settled).toEqual(['first@1']);

    // A third caller arrives during the second read, and needs a third read.
    await log.append([{ kind: 'upserted', resource: mesh('c') }], author);
    const third = track('third', feed.refresh());
    releaseSecond();
    await second;
    expect(settled).toEqual(['first@1', 'second@2']);
    await third;
    expect(settled).toEqual(['first@1', 'second@2', 'third@3']);
    await feed.stop();
  });

  it('catches up on each wake-up', async () => {
    const log = new ScriptedLog();
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 10 });
    await feed.start();
    const next = reached(feed, 1);
    await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    expect((await next).meshes.has('a')).toBe(true);
    await feed.stop();
  });

  it('catches up on resync when the wake-up was lost', async () => {
    const log = new ScriptedLog({ loseWakeups: true });
    const resync = new Subject<void>();
    const feed = new ChangeFeed(log, { resync, pageSize: 10 });
    await feed.start();
    await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    const next = reached(feed, 1);
    resync.next();
    expect((await next).meshes.has('a')).toBe(true);
    await feed.stop();
  });

  it('never runs two catch-ups at once, and folds wake-ups during one into one more', async () => {
    const log = new ScriptedLog();
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 10 });
    await feed.start();
    const readsBefore = log.reads;

    const release = log.hold();
    const started = firstValueFrom(log.readStarted);
    feed.catchUp();
    await started;
    // Committed after the running read's query: only another catch-up can see these.
    await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
    await log.append([{ kind: 'upserted', resource: mesh('c') }], author);
    const caughtUp = reached(feed, 3);
    release();

    expect([...(await caughtUp).meshes.keys()]).toEqual(['a', 'b', 'c']);
    expect(log.reads - readsBefore).toBe(2);
    expect(log.maxConcurrentReads).toBe(1);
    await feed.stop();
  });

  it('keeps its projection and emits nothing while reads fail, then catches up on the next resync', async () => {
    const log = new ScriptedLog();
    const resync = new Subject<void>();
    const errors = new Subject<StoreUnavailableError>();
    const feed = new ChangeFeed(log, { resync, pageSize: 10, onError: (error) => errors.next(error) });
    await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    await feed.start();
    const before = feed.projection;
    const revisions = collect(feed);

    log.failure = new Error('connection refused');
    const failed = firstValueFrom(errors);
    await log.append([{ kind: 'upserted', resource: mesh('b') }], author);
    const error = await failed;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.cause).toBe(log.failure);
    expect(feed.projection).toBe(before);

    const failedAgain = firstValueFrom(errors);
    resync.next();
    await failedAgain;
    expect(revisions).toEqual([1]);

    log.failure = undefined;
    const recovered = reached(feed, 2);
    resync.next();
    expect((await recovered).meshes.has('b')).toBe(true);
    expect(revisions).toEqual([1, 2]);
    await feed.stop();
  });

  it('rejects start with StoreUnavailableError when the first read fails', async () => {
    const log = new ScriptedLog();
    log.failure = new Error('connection refused');
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 10 });
    await expect(feed.start()).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('completes projections and rejects waiters when stopped', async () => {
    const log = new ScriptedLog();
    const feed = new ChangeFeed(log, { resync: NEVER, pageSize: 10 });
    await feed.start();
    const waiting = feed.applied(asSeq(5));
    let completed = false;
    feed.projections.subscribe({ complete: () => (completed = true) });
    await feed.stop();
    expect(completed).toBe(true);
    await expect(waiting).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
