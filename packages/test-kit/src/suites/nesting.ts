import { LockDeadlockError, LockUsageError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { deferred, missing, outcome, pidOf, type SuiteContext, settlesWithin, skipped } from '../context.ts';

/**
 * Nesting (issue 12 A3, C9): a lock call inside a running callback, or given the callback's
 * transaction, nests on that transaction's connection with a savepoint. It never waits on itself,
 * never commits the caller's transaction, and a crossed cycle between two callbacks is a deadlock
 * PostgreSQL sees.
 */
export function nestingSuite(ctx: SuiteContext): void {
  const noContention = missing(
    ctx.harness.capabilities,
    'contention',
    'one connection only: nothing can contend',
  );

  const noBackdoor = missing(
    ctx.harness.capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );

  describe('nesting', () => {
    it('C9: withLock on the same key inside the callback is re-entrant: same connection, no wait', async () => {
      const { name, key } = ctx.name('reentrant');
      const instance = await ctx.open();
      const result = await instance.withLock(name, async (sql) => {
        const outer = await pidOf(sql);
        const started = performance.now();
        const inner = await settlesWithin(
          instance.withLock(name, async (nested) => pidOf(nested), { timeoutMs: 2_000 }),
          5_000,
          'the nested withLock',
        );
        const tried = await instance.tryWithLock(name, async () => 'again');
        return {
          outer,
          inner,
          tried,
          waitedMs: performance.now() - started,
          locks: await ctx.backdoor.locksOn(key),
        };
      });
      expect(result.inner).toBe(result.outer);
      expect(result.tried).toEqual({ acquired: true, value: 'again' });
      expect(result.waitedMs).toBeLessThan(1_000);
      // One holder, no waiter: the nested calls took the lock on the outer connection.
      expect(result.locks.every((l) => l.pid === result.outer && l.granted)).toBe(true);
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it.skipIf(noContention)(
      `a call on the outer database from a callback of another database nests in the outer transaction, not waiting for itself${skipped(noContention)}`,
      async () => {
        const { name, key } = ctx.name('reentrant-across');
        const other = ctx.name('reentrant-across-other');
        const outerDb = await ctx.open();
        const otherDb = await ctx.open();
        const result = await outerDb.withLock(name, async (sql) => {
          const outer = await pidOf(sql);
          // withLock(a) → withLock(b) → withLock(a): the innermost call is on the outer callback's
          // database and key. Not nested, it would queue behind its own outer call until its budget ran out.
          const inner = await otherDb.withLock(other.name, async () =>
            settlesWithin(
              outerDb.withLock(name, async (nested) => pidOf(nested), { timeoutMs: 2_000 }),
              5_000,
              'the innermost withLock',
            ),
          );
          return { outer, inner, locks: await ctx.backdoor.locksOn(key) };
        });
        expect(result.inner).toBe(result.outer);
        expect(result.locks.every((l) => l.pid === result.outer && l.granted)).toBe(true);
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      },
    );

    it.skipIf(noBackdoor)(
      `A3: a nested callback that throws rolls its writes back to the savepoint; the outer transaction commits its own${skipped(noBackdoor)}`,
      async () => {
        const { name } = ctx.name('nested-rollback');
        const inner = ctx.name('nested-rollback-inner');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        const failure = new Error('inner failed');
        await instance.withLock(name, async (sql) => {
          await sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
          const error = await instance
            .withLock(inner.name, async (nested) => {
              await nested(`INSERT INTO ${table}_rows VALUES ('inner')`);
              throw failure;
            })
            .catch((e: unknown) => e);
          expect(error).toBe(failure);
          await instance.withLock(inner.name, async (nested) =>
            nested(`INSERT INTO ${table}_rows VALUES ('inner kept')`),
          );
          // Nothing is committed before the outer callback ends.
          expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([]);
          await sql(`INSERT INTO ${table}_rows VALUES ('after')`);
        });
        expect((await ctx.backdoor.query(`SELECT v FROM ${table}_rows ORDER BY v`)).map((r) => r.v)).toEqual([
          'after',
          'inner kept',
          'outer',
        ]);
      },
    );

    it.skipIf(noBackdoor)(
      `A3: withLock given the callback's transaction nests there: the outer lock stays held and nothing is committed early${skipped(noBackdoor)}`,
      async () => {
        const outer = ctx.name('given-tx-outer');
        const inner = ctx.name('given-tx-inner');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        const failure = new Error('outer fails after the nested call');
        let seen: { rows: unknown[]; outer: unknown[]; inner: unknown[]; pid: number } | undefined;
        const error = await instance.locks
          .withLock(outer.name, async (tx) => {
            const sql = instance.sqlOn(tx);
            const pid = await pidOf(sql);
            await sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
            const value = await settlesWithin(
              instance.locksOn(tx).withLock(inner.name, async (nested) => {
                await instance.sqlOn(nested)(`INSERT INTO ${table}_rows VALUES ('inner')`);
                return pidOf(instance.sqlOn(nested));
              }),
              5_000,
              'withLock on the transaction handle',
            );
            expect(value).toBe(pid);
            seen = {
              rows: await ctx.backdoor.query(`SELECT v FROM ${table}_rows`),
              outer: await ctx.backdoor.locksOn(outer.key),
              inner: await ctx.backdoor.locksOn(inner.key),
              pid,
            };
            throw failure;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(failure);
        expect(seen?.rows).toEqual([]);
        expect(seen?.outer).toEqual([{ pid: seen?.pid, granted: true, mode: 'ExclusiveLock' }]);
        // A nested lock lives until the outer transaction ends.
        expect(seen?.inner).toEqual([{ pid: seen?.pid, granted: true, mode: 'ExclusiveLock' }]);
        expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([]);
        expect(await ctx.backdoor.locksOn(outer.key)).toEqual([]);
        expect(await ctx.backdoor.locksOn(inner.key)).toEqual([]);
      },
    );

    it.skipIf(noBackdoor)(
      `A3: withLock given the ORM's own transaction nests there and never commits it${skipped(noBackdoor)}`,
      async () => {
        const outer = ctx.name('orm-tx-outer');
        const inner = ctx.name('orm-tx-inner');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        const failure = new Error('the caller rolls back');
        const error = await instance
          .transaction(async (tx) => {
            if (tx.handle === undefined) throw new Error('the harness gives no transaction handle');
            await tx.lock(outer.name);
            const pid = await pidOf(tx.sql);
            await tx.sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
            const value = await settlesWithin(
              instance.locksOn(tx.handle).withLock(inner.name, async (nested) => {
                await instance.sqlOn(nested)(`INSERT INTO ${table}_rows VALUES ('inner')`);
                return 'nested';
              }),
              5_000,
              "withLock on the ORM's transaction",
            );
            expect(value).toBe('nested');
            expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([]);
            expect(await ctx.backdoor.locksOn(outer.key)).toEqual([
              { pid, granted: true, mode: 'ExclusiveLock' },
            ]);
            // The caller's transaction is still open and usable.
            expect(await tx.sql(`SELECT count(*)::int AS n FROM ${table}_rows`)).toEqual([{ n: 2 }]);
            throw failure;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(failure);
        expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([]);
        expect(await ctx.backdoor.locksOn(outer.key)).toEqual([]);
        expect(await ctx.backdoor.locksOn(inner.key)).toEqual([]);
      },
    );

    it.skipIf(noBackdoor)(
      `a lock call from work the callback left running, made after it returned, takes its own transaction${skipped(noBackdoor)}`,
      async () => {
        // The continuation carries the callback's context; nesting into that ended transaction would
        // send SAVEPOINT to a connection back in the pool, maybe inside another caller's transaction.
        const outer = ctx.name('left-running-outer');
        const inner = ctx.name('left-running-inner');
        const instance = await ctx.open();
        const gate = deferred();
        let late: Promise<{ pid: number; locks: { pid: number; granted: boolean }[] }> | undefined;
        await instance.withLock(outer.name, async () => {
          late = gate.promise.then(() =>
            instance.withLock(inner.name, async (sql) => ({
              pid: await pidOf(sql),
              locks: await ctx.backdoor.locksOn(inner.key),
            })),
          );
        });
        expect(await ctx.backdoor.locksOn(outer.key)).toEqual([]);
        gate.resolve();
        const seen = await settlesWithin(late!, 5_000, 'the withLock made after the callback returned');
        expect(seen.locks).toEqual([expect.objectContaining({ pid: seen.pid, granted: true })]);
        expect(await ctx.backdoor.locksOn(inner.key)).toEqual([]);
      },
    );

    it('two nested calls at once on one transaction: the second is LockUsageError, never interleaved savepoints', async () => {
      const { name } = ctx.name('nested-concurrent');
      const instance = await ctx.open();
      const results = await instance.withLock(name, async () => {
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const first = outcome(instance.withLock(ctx.name('nested-a').name, () => gate));
        const second = outcome(instance.withLock(ctx.name('nested-b').name, async () => 'ran'));
        const settledSecond = await second;
        release();
        return [await first, settledSecond];
      });
      expect(results[0]).toEqual({ ok: true, value: undefined });
      expect(results[1]?.ok).toBe(false);
      expect(LockUsageError.is((results[1] as { error: unknown }).error)).toBe(true);
    });
  });

  describe.skipIf(noContention)(`crossed nesting${skipped(noContention)}`, () => {
    it('C9: A holds x and wants y, B holds y and wants x: one side gets LockDeadlockError within deadlock_timeout + 1 s', async () => {
      const x = ctx.name('cross-x').name;
      const y = ctx.name('cross-y').name;
      const [a, b] = [await ctx.open(), await ctx.open()];
      const [row] = await ctx.backdoor.query<{ ms: number }>(
        "SELECT setting::int AS ms FROM pg_settings WHERE name = 'deadlock_timeout'",
      );
      const deadlockMs = Number(row?.ms ?? 1_000);
      const bothIn = { a: deferred(), b: deferred() };
      const both = Promise.all([bothIn.a.promise, bothIn.b.promise]);
      let crossedAt = 0;
      // The inner calls are bounded so that a cycle nobody detects ends as a timeout, not a hang.
      const bound = { timeoutMs: deadlockMs + 6_000 };
      let deadlockAt = 0;
      const side = (instance: typeof a, first: string, second: string, entered: { resolve: () => void }) =>
        outcome(
          instance.withLock(first, async () => {
            entered.resolve();
            await both;
            crossedAt ||= performance.now();
            return instance
              .withLock(second, async () => 'got both', bound)
              .catch((error: unknown) => {
                if (LockDeadlockError.is(error)) deadlockAt = performance.now();
                throw error;
              });
          }),
        );
      const results = await Promise.all([side(a, x, y, bothIn.a), side(b, y, x, bothIn.b)]);
      const deadlocks = results.filter((r) => !r.ok && LockDeadlockError.is(r.error));
      expect(
        deadlocks.length,
        `outcomes: ${results.map((r) => (r.ok ? 'ok' : String((r as { error: unknown }).error))).join(' | ')}`,
      ).toBe(1);
      // The other side got both once the loser's transaction rolled back.
      expect(results.filter((r) => r.ok)).toEqual([{ ok: true, value: 'got both' }]);
      expect(deadlockAt - crossedAt).toBeLessThan(deadlockMs + 1_000);
    });
  });
}
