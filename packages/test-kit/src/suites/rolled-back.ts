import { TransactionRolledBackError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { firstReason, missing, pidOf, type SuiteContext, skipped } from '../context.ts';

/**
 * Rolled-back commits (issue 12 A5): when a statement failed inside the callback and the callback
 * caught it, PostgreSQL answers COMMIT with ROLLBACK; the call must say so, never resolve as if the
 * work was written.
 */
export function rolledBackSuite(ctx: SuiteContext): void {
  const noBackdoor = missing(
    ctx.harness.capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );

  const noTerminate = firstReason(
    noBackdoor,
    missing(
      ctx.harness.capabilities,
      'survivesTerminatedTransaction',
      'the driver kills the process when the ORM writes its ROLLBACK to a connection whose backend was terminated (porsager/postgres#1208, docs/reliability.md)',
    ),
  );

  describe('rolled-back commits', () => {
    it.skipIf(noTerminate)(
      `a callback that throws after its backend was terminated: the call rejects with the callback's error, not with the ORM's failed ROLLBACK, and nothing stays locked${skipped(noTerminate)}`,
      async () => {
        const { name, key } = ctx.name('thrown-after-terminate');
        const instance = await ctx.open();
        const thrown = new Error('the callback gave up');
        const error = await instance
          .withLock(name, async (sql) => {
            await ctx.backdoor.terminate(await pidOf(sql));
            throw thrown;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(thrown);
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      },
    );

    it.skipIf(noBackdoor)(
      `A5: a callback that catches a failed statement and returns: TransactionRolledBackError, nothing written${skipped(noBackdoor)}`,
      async () => {
        const { name, key } = ctx.name('rolled-back');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open({ max: 1 });
        for (const verb of ['withLock', 'tryWithLock'] as const) {
          let caught: unknown;
          const error = await instance[verb](name, async (sql) => {
            await sql(`INSERT INTO ${table}_rows VALUES ('lost')`);
            caught = await sql('SELECT 1 / 0 AS boom').catch((e: unknown) => e);
            return 'the callback thinks it is done';
          }).catch((e: unknown) => e);
          expect(caught).toBeInstanceOf(Error);
          expect(TransactionRolledBackError.is(error), `${verb}: ${String(error)}`).toBe(true);
          expect((error as Error).message).toMatch(/rolled back|ROLLBACK/);
          expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([]);
          expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        }
        // The one pooled connection is clean again.
        await instance.withLock(name, async (sql) => sql(`INSERT INTO ${table}_rows VALUES ('kept')`));
        expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([{ v: 'kept' }]);
      },
    );

    const noRecovery =
      noBackdoor ??
      (ctx.harness.capabilities.nestedFailureRecovers === false
        ? 'the ORM rolls its whole transaction back on a failed statement (see the adapter README)'
        : undefined);
    it.skipIf(noRecovery)(
      `A5: a nested callback that swallows a failure is rolled back to its savepoint; the outer work still commits${skipped(noRecovery)}`,
      async () => {
        const { name } = ctx.name('rolled-back-outer');
        const inner = ctx.name('rolled-back-inner');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        const nestedError = await instance.withLock(name, async (sql) => {
          await sql(`INSERT INTO ${table}_rows VALUES ('outer')`);
          const error = await instance
            .withLock(inner.name, async (nested) => {
              await nested(`INSERT INTO ${table}_rows VALUES ('inner')`);
              await nested('SELECT 1 / 0 AS boom').catch(() => undefined);
              return 'swallowed';
            })
            .catch((e: unknown) => e);
          // The transaction is usable again after the savepoint rolled back.
          await sql(`INSERT INTO ${table}_rows VALUES ('after')`);
          return error;
        });
        expect(TransactionRolledBackError.is(nestedError), String(nestedError)).toBe(true);
        expect((await ctx.backdoor.query(`SELECT v FROM ${table}_rows ORDER BY v`)).map((r) => r.v)).toEqual([
          'after',
          'outer',
        ]);
      },
    );
  });
}
