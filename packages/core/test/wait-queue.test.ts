import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LockKey, lockKey } from '../src/index.ts';
import { enterQueue, type QueueExit } from '../src/wait-queue.ts';

type Release = () => void;
type Entered = ReturnType<typeof enterQueue>;

/** The release function of a caller that got its slot at once (no promise: nobody was ahead). */
function now(entered: Entered): Release {
  if (typeof entered !== 'function') throw new Error('expected the slot at once, the caller was queued');
  return entered;
}

/** What a queued caller has been answered so far: its release function, its exit, or nothing yet. */
function queued(entered: Entered): { outcome: Release | QueueExit | undefined; settled: Promise<void> } {
  if (typeof entered === 'function') throw new Error('expected the caller to be queued, it got the slot');
  const tracked: { outcome: Release | QueueExit | undefined; settled: Promise<void> } = {
    outcome: undefined,
    settled: entered.then((outcome) => {
      tracked.outcome = outcome;
    }),
  };
  return tracked;
}

/** Lets every pending promise continuation run (a grant resolves through a few of them). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

// The per-process registry the queue keeps its slots in (shared by every copy of the module, under a
// versioned global symbol): read here only to prove that a finished key leaves nothing behind.
const registry = (globalThis as Record<symbol, unknown>)[Symbol.for('pglock.waitQueues.v1')] as WeakMap<
  object,
  Map<unknown, unknown>
>;
const slotCount = (root: object) => registry.get(root)?.size ?? 0;

const a = lockKey('queue:a');
const b = lockKey('queue:b');
const exclusive = (root: object, keys: readonly LockKey[], signal?: AbortSignal, deadline?: number) =>
  enterQueue(root, keys, false, deadline, signal);
const shared = (root: object, keys: readonly LockKey[]) => enterQueue(root, keys, true, undefined, undefined);

afterEach(() => {
  vi.useRealTimers();
});

describe('enterQueue', () => {
  it('gives a free key at once, synchronously, and frees it on release', () => {
    const root = {};
    const release = now(exclusive(root, [a]));
    expect(slotCount(root)).toBe(1);
    release();
    expect(slotCount(root)).toBe(0);
    now(exclusive(root, [a]))();
  });

  it('keeps separate queues per root handle and per key', () => {
    const one = {};
    const two = {};
    const releases = [
      now(exclusive(one, [a])),
      now(exclusive(two, [a])),
      now(exclusive(one, [b])),
      // The two lock spaces never collide: bigint 1 and the pair (0, 1) are different keys.
      now(exclusive(one, [lockKey(1)])),
      now(exclusive(one, [lockKey({ pair: [0, 1] })])),
    ];
    for (const release of releases) release();
    expect([slotCount(one), slotCount(two)]).toEqual([0, 0]);
  });

  it('hands an exclusive key on in arrival order, one caller at a time', async () => {
    const root = {};
    const order: string[] = [];
    const holder = now(exclusive(root, [a]));
    const waiters = ['first', 'second', 'third'].map((name) => {
      const waiter = queued(exclusive(root, [a]));
      void waiter.settled.then(() => order.push(name));
      return waiter;
    });
    await flush();
    expect(order).toEqual([]);

    holder();
    await flush();
    expect(order).toEqual(['first']);
    expect(typeof waiters[0]!.outcome).toBe('function');

    (waiters[0]!.outcome as Release)();
    await flush();
    expect(order).toEqual(['first', 'second']);

    (waiters[1]!.outcome as Release)();
    await flush();
    expect(order).toEqual(['first', 'second', 'third']);
    (waiters[2]!.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('lets shared callers in together, but never past a queued exclusive caller', async () => {
    const root = {};
    const readers = [now(shared(root, [a])), now(shared(root, [a]))];
    const writer = queued(exclusive(root, [a]));
    const lateReader = queued(shared(root, [a]));
    await flush();
    expect([writer.outcome, lateReader.outcome]).toEqual([undefined, undefined]);

    readers[0]!();
    await flush();
    expect(writer.outcome).toBeUndefined();
    readers[1]!();
    await flush();
    expect(typeof writer.outcome).toBe('function');
    expect(lateReader.outcome).toBeUndefined();

    (writer.outcome as Release)();
    await flush();
    expect(typeof lateReader.outcome).toBe('function');
    (lateReader.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('hands an exclusive slot to every shared caller at the head at once, and stops at an exclusive one', async () => {
    const root = {};
    const holder = now(exclusive(root, [a]));
    const [r1, r2, w, r3] = [
      shared(root, [a]),
      shared(root, [a]),
      exclusive(root, [a]),
      shared(root, [a]),
    ].map(queued);
    holder();
    await flush();
    expect([typeof r1!.outcome, typeof r2!.outcome]).toEqual(['function', 'function']);
    expect([w!.outcome, r3!.outcome]).toEqual([undefined, undefined]);

    (r1!.outcome as Release)();
    await flush();
    expect(w!.outcome).toBeUndefined();
    (r2!.outcome as Release)();
    await flush();
    expect(typeof w!.outcome).toBe('function');
    expect(r3!.outcome).toBeUndefined();

    (w!.outcome as Release)();
    await flush();
    expect(typeof r3!.outcome).toBe('function');
    (r3!.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('a release function releases once: calling it again frees nobody else’s turn', async () => {
    const root = {};
    const holder = now(exclusive(root, [a]));
    const next = queued(exclusive(root, [a]));
    const after = queued(exclusive(root, [a]));
    holder();
    holder();
    await flush();
    expect(typeof next.outcome).toBe('function');
    expect(after.outcome).toBeUndefined();

    const release = next.outcome as Release;
    release();
    release();
    await flush();
    expect(typeof after.outcome).toBe('function');
    // `after` holds the key: a newcomer still queues behind it.
    const newcomer = queued(exclusive(root, [a]));
    await flush();
    expect(newcomer.outcome).toBeUndefined();
    (after.outcome as Release)();
    await flush();
    (newcomer.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('leaves with "timeout" when the deadline passes, holding nothing and leaving no waiter', async () => {
    const root = {};
    const holder = now(exclusive(root, [a]));
    const late = queued(exclusive(root, [a], undefined, performance.now()));
    await late.settled;
    expect(late.outcome).toBe('timeout');
    holder();
    // Nobody is left in the queue: the next caller gets the key at once.
    expect(slotCount(root)).toBe(0);
    now(exclusive(root, [a]))();
  });

  it('waits for its deadline, not less, and a grant before it cancels the timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const root = {};
    const holder = now(exclusive(root, [a]));
    const timed = queued(exclusive(root, [a], undefined, performance.now() + 1_000));
    const patient = queued(exclusive(root, [a], undefined, performance.now() + 100));
    vi.advanceTimersByTime(90);
    await flush();
    expect([timed.outcome, patient.outcome]).toEqual([undefined, undefined]);
    vi.advanceTimersByTime(20);
    await flush();
    expect(patient.outcome).toBe('timeout');

    holder();
    await flush();
    expect(typeof timed.outcome).toBe('function');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(2_000);
    await flush();
    expect(typeof timed.outcome).toBe('function');
    (timed.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('leaves with "aborted" when the signal fires, or at once when it already has', async () => {
    const root = {};
    const holder = now(exclusive(root, [a]));
    const controller = new AbortController();
    const waiting = queued(exclusive(root, [a], controller.signal));
    const before = queued(exclusive(root, [a], AbortSignal.abort()));
    await before.settled;
    expect(before.outcome).toBe('aborted');
    await flush();
    expect(waiting.outcome).toBeUndefined();

    controller.abort();
    await waiting.settled;
    expect(waiting.outcome).toBe('aborted');
    holder();
    expect(slotCount(root)).toBe(0);
    now(exclusive(root, [a]))();
  });

  it('an exit from the middle of the queue keeps the others in order', async () => {
    const root = {};
    const holder = now(exclusive(root, [a]));
    const controller = new AbortController();
    const first = queued(exclusive(root, [a]));
    const quitter = queued(exclusive(root, [a], controller.signal));
    const last = queued(exclusive(root, [a]));
    controller.abort();
    await quitter.settled;
    expect(quitter.outcome).toBe('aborted');

    holder();
    await flush();
    expect(typeof first.outcome).toBe('function');
    expect(last.outcome).toBeUndefined();
    (first.outcome as Release)();
    await flush();
    expect(typeof last.outcome).toBe('function');
    (last.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('when the exclusive head leaves, the shared callers behind it join the shared holders at once', async () => {
    const root = {};
    const reader = now(shared(root, [a]));
    const controller = new AbortController();
    const writer = queued(exclusive(root, [a], controller.signal));
    const readers = [queued(shared(root, [a])), queued(shared(root, [a]))];
    const writerBehind = queued(exclusive(root, [a]));
    await flush();
    expect(readers.map((r) => r.outcome)).toEqual([undefined, undefined]);

    controller.abort();
    await flush();
    expect(writer.outcome).toBe('aborted');
    expect(readers.map((r) => typeof r.outcome)).toEqual(['function', 'function']);
    expect(writerBehind.outcome).toBeUndefined();

    reader();
    for (const r of readers) (r.outcome as Release)();
    await flush();
    expect(typeof writerBehind.outcome).toBe('function');
    (writerBehind.outcome as Release)();
    expect(slotCount(root)).toBe(0);
  });

  it('several keys: holds the free ones while it waits, and gives them all back when it leaves', async () => {
    const root = {};
    const holderOfB = now(exclusive(root, [b]));
    const controller = new AbortController();
    const both = queued(exclusive(root, [a, b], controller.signal));
    // `a` is taken by the caller waiting for both: a caller for `a` alone queues behind it.
    const onlyA = queued(exclusive(root, [a]));
    await flush();
    expect([both.outcome, onlyA.outcome]).toEqual([undefined, undefined]);

    controller.abort();
    await flush();
    expect(both.outcome).toBe('aborted');
    expect(typeof onlyA.outcome).toBe('function');
    (onlyA.outcome as Release)();
    holderOfB();
    expect(slotCount(root)).toBe(0);
  });

  it('several keys: resolves one release function for all of them once the last is free', async () => {
    const root = {};
    const holderOfB = now(exclusive(root, [b]));
    const both = queued(exclusive(root, [a, b]));
    holderOfB();
    await flush();
    expect(typeof both.outcome).toBe('function');
    // It holds both keys now: callers for either one queue.
    const onlyA = queued(exclusive(root, [a]));
    const onlyB = queued(exclusive(root, [b]));
    await flush();
    expect([onlyA.outcome, onlyB.outcome]).toEqual([undefined, undefined]);

    (both.outcome as Release)();
    await flush();
    expect([typeof onlyA.outcome, typeof onlyB.outcome]).toEqual(['function', 'function']);
    (onlyA.outcome as Release)();
    (onlyB.outcome as Release)();
    expect(slotCount(root)).toBe(0);
    // Free keys from the start: one synchronous release for every key.
    const release = now(exclusive(root, [a, b]));
    expect(slotCount(root)).toBe(2);
    release();
    release();
    expect(slotCount(root)).toBe(0);
  });
});
