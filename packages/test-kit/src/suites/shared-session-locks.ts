import {
  InvalidLockOptionsError,
  LockLostError,
  LockNotAcquiredError,
  type SessionLock,
  type SessionLockOptions,
} from '@pglock/core';
import { describe, expect, it } from 'vitest';
import {
  firstReason,
  missing,
  outcome,
  type SuiteContext,
  settlesWithin,
  skipped,
  sleep,
  watchCrashes,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';
import { sessionVerbs } from './session-locks.ts';

/** Session locks one process holds in these tests: the fleet (issue 26 item 4). */
const NAMES = 50;

/**
 * Shared session locks (issue 26 item 4): the session locks of one process share a connection
 * (`connection: 'shared'`, the default), a key held there is never granted a second time (PostgreSQL
 * would: a session's advisory locks are re-entrant), a contended key is waited for on a connection
 * of its own, a lost shared connection loses every lock on it loudly, and `inspectLocks` tells each
 * lock's own hold time. Checked in `pg_locks` through the backdoor.
 */
export function sharedSessionLocksSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const reason = firstReason(
    missing(capabilities, 'session', 'the adapter offers no session locks'),
    ctx.viaPooler
      ? 'through a transaction-mode pooler session locks are refused (sessionLocks checks that)'
      : undefined,
    missing(capabilities, 'concurrentCalls', 'one client: the instance runs one call at a time'),
  );

  /** Distinct holders and the number of granted rows of `keys` in pg_locks (one statement). */
  async function holdersOf(keys: readonly bigint[]): Promise<{ pids: Set<number>; granted: number }> {
    const unsigned = keys.map((key) => BigInt.asUintN(64, key));
    const rows = await ctx.backdoor.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks AS l
         JOIN unnest($1::text[]::bigint[], $2::text[]::bigint[]) AS k(c, o) ON l.classid = k.c::oid AND l.objid = k.o::oid
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [unsigned.map((key) => String(key >> 32n)), unsigned.map((key) => String(key & 0xffffffffn))],
    );
    return { pids: new Set(rows.map((row) => Number(row.pid))), granted: rows.length };
  }

  async function holdMany(
    instance: AdapterInstance,
    label: string,
    options?: SessionLockOptions,
  ): Promise<{ handles: SessionLock[]; keys: bigint[]; names: string[] }> {
    const made = Array.from({ length: NAMES }, (_, i) => ctx.name(`${label}-${i}`));
    const verbs = sessionVerbs(instance.locks);
    // Taken at once, by every session verb: the shared connection serves them all.
    const handles = await Promise.all(
      made.map(({ name }, i) =>
        i % 2 === 0
          ? verbs.acquireSessionLock(name, options)
          : verbs.tryAcquireSessionLock(name, options).then((handle) => {
              if (handle === undefined) throw new Error(`${name} was free, but its try said taken`);
              return handle;
            }),
      ),
    );
    return { handles, keys: made.map((m) => m.key), names: made.map((m) => m.name) };
  }

  describe.skipIf(reason)(`shared session locks${skipped(reason)}`, () => {
    it(`${NAMES} session locks of one process are held on one connection, exclusive to other instances; released, nothing stays locked and the connection is the pool's again`, async () => {
      const instance = await ctx.open({ max: 2 });
      const other = await ctx.open();
      const { handles, keys, names } = await holdMany(instance, 'shared-fleet');
      try {
        const held = await holdersOf(keys);
        expect(held.granted).toBe(NAMES);
        expect(held.pids.size).toBe(1);
        const [pid] = held.pids;
        expect(new Set(handles.map((handle) => handle.pid))).toEqual(new Set([pid]));
        expect(
          await sessionVerbs(other.locks).tryAcquireSessionLock(names[NAMES - 1] as string),
        ).toBeUndefined();
        expect(await other.tryWithLock(names[0] as string, async () => 'ran')).toEqual({ acquired: false });
        // The pool's second connection is free: a transaction lock runs beside the held session locks.
        expect(await instance.tryWithLock(ctx.name('shared-beside').name, async () => 'beside')).toEqual({
          acquired: true,
          value: 'beside',
        });
      } finally {
        await Promise.all(handles.map((handle) => handle.release()));
      }
      expect((await holdersOf(keys)).granted).toBe(0);
      expect(handles.every((handle) => !handle.signal.aborted)).toBe(true);
      // Both pooled connections are free: two transactions hold locks at once.
      let inside = 0;
      const both = await settlesWithin(
        Promise.all(
          [0, 1].map((i) =>
            instance.withLock(ctx.name(`shared-after-${i}`).name, async () => {
              inside++;
              await sleep(50);
              return inside;
            }),
          ),
        ),
        5_000,
        'two transactions after the release',
      );
      expect(Math.max(...both)).toBe(2);
    });

    it('a key the shared connection holds is never granted to the same process twice: a try is undefined, a bounded wait times out, a wait gets it on a connection of its own once released', async () => {
      const { name, key } = ctx.name('shared-reentry');
      const instance = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const first = await verbs.acquireSessionLock(name);
      let waiter: Promise<SessionLock> | undefined;
      try {
        expect(await verbs.tryAcquireSessionLock(name)).toBeUndefined();
        const timed = await outcome(verbs.acquireSessionLock(name, { timeoutMs: 200 }));
        expect(LockNotAcquiredError.is((timed as { error?: unknown }).error)).toBe(true);
        waiter = verbs.acquireSessionLock(name);
        await ctx.backdoor.waitForWaiters(key, 1);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: first.pid, granted: true, mode: 'ExclusiveLock' },
          { pid: expect.any(Number), granted: false, mode: 'ExclusiveLock' },
        ]);
      } finally {
        await first.release();
      }
      const second = await settlesWithin(waiter, 5_000, 'the waiter after the release');
      try {
        expect(second.pid).not.toBe(first.pid);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: second.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
      } finally {
        await second.release();
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('tries of one free key at once from one process: exactly one holds it', async () => {
      const { name, key } = ctx.name('shared-race');
      const instance = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const tries = await Promise.all(Array.from({ length: 10 }, () => verbs.tryAcquireSessionLock(name)));
      const held = tries.filter((handle) => handle !== undefined);
      try {
        expect(held).toHaveLength(1);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: held[0]?.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
      } finally {
        await Promise.all(held.map((handle) => handle.release()));
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('shared-mode locks of one process coexist (the second on a connection of its own); an exclusive try is refused', async () => {
      const { name, key } = ctx.name('shared-mode');
      const instance = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const one = await verbs.acquireSessionLock(name, { shared: true });
      const two = await settlesWithin(
        verbs.acquireSessionLock(name, { shared: true, timeoutMs: 2_000 }),
        5_000,
        'a second shared lock',
      );
      try {
        expect(two.pid).not.toBe(one.pid);
        const rows = await ctx.backdoor.locksOn(key);
        expect(rows.map((row) => row.mode)).toEqual(['ShareLock', 'ShareLock']);
        expect(rows.every((row) => row.granted)).toBe(true);
        expect(await verbs.tryAcquireSessionLock(name)).toBeUndefined();
      } finally {
        await one.release();
        await two.release();
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('a multi-key try that fails part-way on the shared connection takes nothing, and the locks already held there stay held', async () => {
      const held = ctx.name('shared-multi-held');
      const free = ctx.name('shared-multi-free');
      const taken = ctx.name('shared-multi-taken');
      const instance = await ctx.open();
      const other = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const mine = await verbs.acquireSessionLock(held.name);
      const theirs = await sessionVerbs(other.locks).acquireSessionLock(taken.name);
      try {
        expect(await verbs.tryAcquireSessionLock([free.name, taken.name])).toBeUndefined();
        expect(await ctx.backdoor.locksOn(free.key)).toEqual([]);
        expect(await ctx.backdoor.locksOn(held.key)).toEqual([
          { pid: mine.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
        const both = await verbs.acquireSessionLock([free.name, ctx.name('shared-multi-more').name]);
        expect(both.pid).toBe(mine.pid);
        await both.release();
        expect(mine.signal.aborted).toBe(false);
      } finally {
        await mine.release();
        await theirs.release();
      }
      expect(await ctx.backdoor.locksOn(held.key)).toEqual([]);
    });

    it('the shared backend terminated: every lock on it is lost (signal and release say LockLostError), nothing stays locked, no crash; the next lock gets a new connection', async () => {
      const instance = await ctx.open({ errorListeners: false });
      const crashes = watchCrashes();
      const verbs = sessionVerbs(instance.locks);
      const made = Array.from({ length: 5 }, (_, i) => ctx.name(`shared-lost-${i}`));
      const handles = await Promise.all(
        made.map(({ name }) => verbs.acquireSessionLock(name, { heartbeatMs: 300 })),
      );
      const pid = handles[0]?.pid;
      expect(new Set(handles.map((handle) => handle.pid)).size).toBe(1);
      const lost = Promise.all(
        handles.map(
          (handle) =>
            new Promise<void>((resolve) => {
              if (handle.signal.aborted) resolve();
              handle.signal.addEventListener('abort', () => resolve(), { once: true });
            }),
        ),
      );
      const terminatedAt = performance.now();
      await ctx.backdoor.query('SELECT pg_terminate_backend($1::int)', [pid]);
      await settlesWithin(lost, 5_000, 'every lost signal');
      expect(performance.now() - terminatedAt).toBeLessThan(1_500);
      for (const handle of handles) {
        expect(LockLostError.is(handle.signal.reason)).toBe(true);
        expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
      }
      expect((await holdersOf(made.map((m) => m.key))).granted).toBe(0);
      const again = await settlesWithin(
        verbs.acquireSessionLock(made[0]?.name as string),
        5_000,
        'a lock after',
      );
      expect(again.pid).not.toBe(pid);
      await again.release();
      await settlesWithin(instance.close(), 5_000, 'close()');
      expect(crashes.stop().map(String)).toEqual([]);
    });

    it.each(['shared', 'dedicated'] as const)(
      'a pooled connection whose backend was terminated as it sat idle: the next %s session lock is held on a live one, no error, no crash',
      async (mode) => {
        const instance = await ctx.open();
        const crashes = watchCrashes();
        const verbs = sessionVerbs(instance.locks);
        const { name, key } = ctx.name(`idle-killed-${mode}`);
        const first = await verbs.acquireSessionLock(name, { connection: mode });
        const idle = first.pid;
        await first.release();
        // Not waited for: the pool may still count the connection as idle when the next call asks
        // for one (its first statement then finds it dead, and pglock takes another).
        await ctx.backdoor.query('SELECT pg_terminate_backend($1::int)', [idle]);
        const next = await settlesWithin(
          verbs.acquireSessionLock(name, { connection: mode }),
          10_000,
          'the next lock',
        );
        expect(next.pid).not.toBe(idle);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: next.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
        await next.release();
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        await settlesWithin(instance.close(), 5_000, 'close()');
        expect(crashes.stop().map(String)).toEqual([]);
      },
    );

    it('inspectLocks().heldMs of each lock on a shared connection is its own (heartbeatMs 300)', async () => {
      const older = ctx.name('shared-held-older');
      const newer = ctx.name('shared-held-newer');
      const instance = await ctx.open();
      const observer = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const first = await verbs.acquireSessionLock(older.name, { heartbeatMs: 300 });
      await sleep(1_500);
      const calledNewer = performance.now();
      const second = await verbs.acquireSessionLock(newer.name, { heartbeatMs: 300 });
      try {
        expect(second.pid).toBe(first.pid);
        await sleep(400);
        const locks = await observer.inspectLocks();
        const heldMs = (key: bigint) =>
          locks.find((l) => l.key.form === 'bigint' && l.key.value === key && l.granted)?.heldMs ?? -1;
        expect(heldMs(older.key)).toBeGreaterThanOrEqual(1_800);
        expect(heldMs(newer.key)).toBeGreaterThanOrEqual(350);
        expect(heldMs(newer.key)).toBeLessThanOrEqual(performance.now() - calledNewer + 1_000);
        expect(heldMs(newer.key)).toBeLessThan(heldMs(older.key) - 1_000);
      } finally {
        await second.release();
        await first.release();
      }
    });

    it("connection: 'dedicated' holds a lock on a connection of its own; a bad connection is InvalidLockOptionsError before any SQL", async () => {
      const a = ctx.name('shared-dedicated-a');
      const b = ctx.name('shared-dedicated-b');
      const c = ctx.name('shared-dedicated-c');
      const instance = await ctx.open();
      const verbs = sessionVerbs(instance.locks);
      const shared = await verbs.acquireSessionLock(a.name);
      const own = await verbs.acquireSessionLock(b.name, { connection: 'dedicated' });
      const alsoShared = await verbs.acquireSessionLock(c.name, { connection: 'shared' });
      try {
        expect(own.pid).not.toBe(shared.pid);
        expect(alsoShared.pid).toBe(shared.pid);
        for (const bad of ['pooled', 1, null]) {
          const error = await verbs
            .acquireSessionLock(ctx.name('shared-bad').name, { connection: bad as never })
            .catch((e: unknown) => e);
          expect(InvalidLockOptionsError.is(error), String(error)).toBe(true);
          expect((error as Error).message).toContain("connection must be 'shared' or 'dedicated'");
        }
      } finally {
        await Promise.all([shared.release(), own.release(), alsoShared.release()]);
      }
      expect((await holdersOf([a.key, b.key, c.key])).granted).toBe(0);
    });
  });
}
