import { LockDeadlockError, LockUsageError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import {
  deferred,
  holdLock,
  missing,
  outcome,
  pidOf,
  type SuiteContext,
  settlesWithin,
  skipped,
  sleep,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

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

  describe('nesting: calls the callback left running (issue 23)', () => {
    // The rows a table holds, read in a transaction of the instance's own (PGlite has no backdoor).
    const rowsOf = async (instance: AdapterInstance, table: string): Promise<string[]> =>
      instance.withLock(ctx.name('read-rows').name, async (sql) =>
        (await sql(`SELECT v FROM ${table}_rows ORDER BY v`)).map((r) => String(r.v)),
      );
    const createRows = async (instance: AdapterInstance, table: string): Promise<void> => {
      await instance.withLock(ctx.name('create-rows').name, async (sql) =>
        sql(`CREATE TABLE ${table}_rows (v text)`),
      );
    };

    it('a nested call still running when the outer callback returns: the outer waits for it, rolls back and rejects with LockUsageError naming it; the nested call rejects too', async () => {
      const outer = ctx.name('left-nested-outer');
      const inner = ctx.name('left-nested-inner');
      const table = ctx.table();
      const instance = await ctx.open();
      await createRows(instance, table);
      const entered = deferred();
      const finish = deferred();
      let nestedCall: Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> | undefined;
      const outerCall = outcome(
        instance.withLock(outer.name, async (sql) => {
          await sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
          // Fire and forget: the callback returns while the nested callback still runs.
          nestedCall = outcome(
            instance.withLock(inner.key, async (nested) => {
              entered.resolve();
              await finish.promise;
              await nested(`INSERT INTO ${table}_rows VALUES ('inner')`);
              return 'inner done';
            }),
          );
          await entered.promise;
          return 'outer done';
        }),
      );
      await entered.promise;
      // Whatever the outer call does once its callback returned, it does it before the nested one ends.
      const early = await Promise.race([outerCall, Promise.resolve('pending' as const)]);
      expect(early).toBe('pending');
      finish.resolve();
      const settled = await settlesWithin(outerCall, 10_000, 'the outer withLock');
      const nestedSettled = await settlesWithin(nestedCall!, 10_000, 'the nested withLock');
      expect(settled.ok, 'the outer call must not resolve').toBe(false);
      const error = (settled as { error: unknown }).error;
      expect(LockUsageError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toContain(String(inner.key));
      // The nested call's writes were rolled back with the outer transaction: it does not resolve as if kept.
      expect(nestedSettled.ok).toBe(false);
      expect(
        LockUsageError.is((nestedSettled as { error: unknown }).error),
        String((nestedSettled as { error: unknown }).error),
      ).toBe(true);
      // Nothing committed, and nothing ran outside the transaction (the nested INSERT did not autocommit).
      expect(await rowsOf(instance, table)).toEqual([]);
    });

    it.skipIf(noContention)(
      `no other connection takes the outer key while a nested call the callback left running still runs; pg_locks shows the outer's backend holding it${skipped(noContention)}`,
      async () => {
        const outer = ctx.name('left-nested-held-outer');
        const inner = ctx.name('left-nested-held-inner');
        const instance = await ctx.open();
        const rival = await ctx.open();
        const entered = deferred<number>();
        const finish = deferred();
        const returned = deferred();
        let nestedCall: Promise<unknown> | undefined;
        const outerCall = outcome(
          instance.withLock(outer.name, async (sql) => {
            const pid = await pidOf(sql);
            nestedCall = outcome(
              instance.withLock(inner.name, async () => {
                entered.resolve(pid);
                await finish.promise;
              }),
            );
            await entered.promise;
            returned.resolve();
          }),
        );
        const pid = await entered.promise;
        await returned.promise;
        // Before the fix the outer COMMIT released the key right after the callback returned.
        const tried = await rival.tryWithLock(outer.name, async () => 'rival got it', { timeoutMs: 1_000 });
        expect(tried).toEqual({ acquired: false });
        expect(await ctx.backdoor.locksOn(outer.key)).toEqual([
          { pid, granted: true, mode: 'ExclusiveLock' },
        ]);
        expect(await ctx.backdoor.locksOn(inner.key)).toEqual([
          { pid, granted: true, mode: 'ExclusiveLock' },
        ]);
        finish.resolve();
        const settled = await settlesWithin(outerCall, 10_000, 'the outer withLock');
        await settlesWithin(nestedCall!, 10_000, 'the nested withLock');
        expect(LockUsageError.is((settled as { error?: unknown }).error)).toBe(true);
        expect(await ctx.backdoor.locksOn(outer.key)).toEqual([]);
        expect(await ctx.backdoor.locksOn(inner.key)).toEqual([]);
        expect(await rival.tryWithLock(outer.name, async () => 'rival got it')).toEqual({
          acquired: true,
          value: 'rival got it',
        });
      },
    );

    it('an outer callback that throws while a nested call runs: its error comes after the nested call ended, and nothing the nested call ran was committed', async () => {
      const outer = ctx.name('left-nested-throw-outer');
      const inner = ctx.name('left-nested-throw-inner');
      const table = ctx.table();
      const instance = await ctx.open();
      await createRows(instance, table);
      const entered = deferred();
      const finish = deferred();
      const failure = new Error('the outer callback fails');
      let nestedEnded = false;
      const outerCall = outcome(
        instance.withLock(outer.name, async () => {
          void instance
            .withLock(inner.name, async (nested) => {
              entered.resolve();
              await finish.promise;
              await nested(`INSERT INTO ${table}_rows VALUES ('inner')`);
            })
            .catch(() => undefined)
            .finally(() => {
              nestedEnded = true;
            });
          await entered.promise;
          throw failure;
        }),
      );
      await entered.promise;
      expect(await Promise.race([outerCall, Promise.resolve('pending' as const)])).toBe('pending');
      finish.resolve();
      const settled = await settlesWithin(outerCall, 10_000, 'the outer withLock');
      expect(settled).toEqual({ ok: false, error: failure });
      expect(nestedEnded).toBe(true);
      expect(await rowsOf(instance, table)).toEqual([]);
    });

    /**
     * Runs `verbs` on the transaction a callback got, from work it left running, once it has settled
     * and `after` has resolved: each must be LockUsageError before its callback and before any SQL.
     */
    const callOnSettledTransaction = async (label: string, after: () => Promise<void>) => {
      const outer = ctx.name(`${label}-outer`);
      const inner = ctx.name(`${label}-inner`);
      const instance = await ctx.open();
      const gate = deferred();
      let ran = false;
      let given: unknown;
      let late: Promise<{ ok: boolean; error?: unknown }[]> | undefined;
      const callback = async () => {
        ran = true;
      };
      await instance.locks.withLock(outer.name, async (tx) => {
        given = tx;
        late = gate.promise.then(async () => [
          await outcome(instance.locksOn(tx).withLock(inner.name, callback)),
          await outcome(instance.locksOn(tx).tryWithLock(inner.name, callback)),
          await outcome(instance.locks.lock(tx as never, inner.name)),
          await outcome(instance.locks.tryLock(tx as never, inner.name)),
        ]);
      });
      await after();
      const before = instance.statementCount();
      gate.resolve();
      const results = await settlesWithin(late!, 5_000, 'the calls given the settled transaction');
      if (given === instance.db) {
        // A lone pg.Client is both the database and its callbacks' transaction: a call on it after the
        // callback takes a transaction of its own (no pool it could be back in), and lock(tx) finds
        // no transaction.
        expect(results.map((r) => r.ok)).toEqual([true, true, false, false]);
        for (const result of results.slice(2)) expect(LockUsageError.is(result.error)).toBe(true);
        return;
      }
      for (const result of results) {
        expect(result.ok).toBe(false);
        expect(LockUsageError.is(result.error), String(result.error)).toBe(true);
      }
      expect(ran).toBe(false);
      if (ctx.harness.capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    };

    it('a lock call given the transaction of a callback that has settled, from work it left running: LockUsageError before its callback runs and before any SQL', async () => {
      if (!ctx.harness.capabilities.pooledTransactionHandle) {
        await callOnSettledTransaction('settled-tx', async () => undefined);
        return;
      }
      // A pooled client is told from its next owner's by the lock context alone: another callback
      // runs meanwhile, as in a busy app, so that pglock's context store is surely enabled.
      const keeper = await holdLock(await ctx.open(), ctx.name('settled-tx-keeper').name);
      try {
        await callOnSettledTransaction('settled-tx', async () => undefined);
      } finally {
        await keeper.release();
      }
    });

    const pooledHandle = ctx.harness.capabilities.pooledTransactionHandle
      ? "the callback's handle is the pooled driver client, the next caller's once the transaction ended: only the lock context (the test above) tells a late call on it from that caller's"
      : undefined;
    it.skipIf(pooledHandle)(
      `the same once no callback has run for a while (pglock's context store idle): the settled handle is remembered${skipped(pooledHandle)}`,
      async () => {
        // Longer than the 10 ms the store stays enabled after the last callback (core's nesting.ts).
        await callOnSettledTransaction('settled-tx-idle', () => sleep(100));
      },
    );

    it('a nested call that rolls back to its savepoint while the outer callback ran statements of its own: the outer never resolves with that write lost', async () => {
      const outer = ctx.name('interleaved-outer');
      const inner = ctx.name('interleaved-inner');
      const table = ctx.table();
      const instance = await ctx.open();
      await createRows(instance, table);
      const entered = deferred();
      const fail = deferred();
      const failure = new Error('the nested callback fails');
      const settled = await outcome(
        instance.withLock(outer.name, async (sql) => {
          const nestedCall = instance
            .withLock(inner.key, async (nested) => {
              await nested(`INSERT INTO ${table}_rows VALUES ('inner')`);
              entered.resolve();
              await fail.promise;
              throw failure;
            })
            .catch((error: unknown) => error);
          // The outer's own write, while the nested call's savepoint is open.
          await entered.promise;
          await sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
          fail.resolve();
          expect(await nestedCall).toBe(failure);
          return 'outer done';
        }),
      );
      const rows = await rowsOf(instance, table);
      if (settled.ok) expect(rows, 'the outer resolved: its write must be there').toContain('outer');
      expect(settled.ok, `the outer resolved with rows ${JSON.stringify(rows)}`).toBe(false);
      const error = (settled as { error: unknown }).error;
      expect(LockUsageError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toContain(String(inner.key));
      expect(rows).toEqual([]);
    });

    it('no false alarm: a failing nested call awaited through an async helper, or with a bound, is caught and the outer commits; work beside a nested call that is released commits too', async () => {
      const outer = ctx.name('awaited-outer');
      const inner = ctx.name('awaited-inner');
      const table = ctx.table();
      const instance = await ctx.open();
      await createRows(instance, table);
      const failure = new Error('the nested callback fails');
      // A helper that returns the nested call (an async function: the call's promise resolves another).
      const failing = async (v: string) =>
        instance.withLock(inner.name, async (nested) => {
          await nested(`INSERT INTO ${table}_rows VALUES ('${v}')`);
          throw failure;
        });
      const settled = await outcome(
        instance.withLock(outer.name, async (sql) => {
          await sql(`INSERT INTO ${table}_rows VALUES ('outer 1')`);
          expect(await failing('lost 1').catch((e: unknown) => e)).toBe(failure);
          expect(await settlesWithin(failing('lost 2'), 5_000, 'the helper').catch((e: unknown) => e)).toBe(
            failure,
          );
          await sql(`INSERT INTO ${table}_rows VALUES ('outer 2')`);
          // Beside a nested call that is released, what the outer sends commits with it.
          const entered = deferred();
          const finish = deferred();
          const kept = instance.withLock(inner.name, async (nested) => {
            await nested(`INSERT INTO ${table}_rows VALUES ('kept')`);
            entered.resolve();
            await finish.promise;
          });
          await entered.promise;
          await sql(`INSERT INTO ${table}_rows VALUES ('outer 3')`);
          finish.resolve();
          await kept;
          return 'done';
        }),
      );
      expect(settled).toEqual({ ok: true, value: 'done' });
      expect(await rowsOf(instance, table)).toEqual(['kept', 'outer 1', 'outer 2', 'outer 3']);
    });

    it('lock/tryLock on the transaction from the outer callback while a nested call runs is LockUsageError (it would be taken inside the nested savepoint)', async () => {
      const outer = ctx.name('interleaved-lock-outer');
      const inner = ctx.name('interleaved-lock-inner');
      const other = ctx.name('interleaved-lock-other');
      const instance = await ctx.open();
      const entered = deferred();
      const finish = deferred();
      const results = await instance.locks.withLock(outer.name, async (tx) => {
        const nestedCall = instance.withLock(inner.name, async () => {
          entered.resolve();
          await finish.promise;
        });
        await entered.promise;
        const attempts = [
          await outcome(instance.locks.lock(tx as never, other.name)),
          await outcome(instance.locks.tryLock(tx as never, other.name)),
        ];
        finish.resolve();
        await nestedCall;
        // Once the nested call ended, the transaction is the outer's again.
        attempts.push(await outcome(instance.locks.lock(tx as never, other.name)));
        return attempts;
      });
      for (const result of results.slice(0, 2)) {
        expect(result.ok).toBe(false);
        expect(
          LockUsageError.is((result as { error: unknown }).error),
          String((result as { error: unknown }).error),
        ).toBe(true);
      }
      expect(results[2]).toEqual({ ok: true, value: undefined });
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
