import { describe, expect, it } from 'vitest';
import { holdLock, missing, pidOf, type SuiteContext } from '../context.ts';
import type { Sql } from '../harness.ts';

// The session's own advisory locks on `key`, read through the adapter's connection itself.
async function ownLocks(sql: Sql, key: bigint): Promise<Record<string, unknown>[]> {
  const unsigned = BigInt.asUintN(64, key);
  return sql(
    `SELECT mode, granted FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid = 1
       AND classid = $1::text::bigint::oid AND objid = $2::text::bigint::oid`,
    [String(unsigned >> 32n), String(unsigned & 0xffffffffn)],
  );
}

/** Holding is visible to others; commit, rollback and a throwing callback all release. */
export function releaseSuite(ctx: SuiteContext): void {
  const noContention = missing(
    ctx.harness.capabilities,
    'contention',
    'one connection only: no second session to look from',
  );

  describe.skipIf(noContention)(
    `holding and releasing, seen from another session${noContention ? ` (skipped: ${noContention})` : ''}`,
    () => {
      it('while held, pg_locks, isLocked and inspectLocks show the holder; after commit nothing is held', async () => {
        const { name, key } = ctx.name('held');
        const instance = await ctx.open();
        const observer = await ctx.open();
        const held = await holdLock(instance, name);
        try {
          expect(await ctx.backdoor.locksOn(key)).toEqual([
            { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
          expect(await observer.isLocked(name)).toBe(true);
          const rows = (await observer.inspectLocks()).filter(
            (l) => l.key.form === 'bigint' && l.key.value === key,
          );
          expect(rows).toMatchObject([
            { pid: held.pid, granted: true, mode: 'exclusive', ownSession: false },
          ]);
        } finally {
          await held.release();
        }
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        expect(await observer.isLocked(name)).toBe(false);
      });

      it('released on rollback of a transaction that took lock()', async () => {
        const { name, key } = ctx.name('rollback');
        const instance = await ctx.open();
        const failure = new Error('roll back');
        let pid = 0;
        const error = await instance
          .transaction(async (tx) => {
            await tx.lock(name);
            pid = await pidOf(tx.sql);
            expect(await ctx.backdoor.locksOn(key)).toEqual([{ pid, granted: true, mode: 'ExclusiveLock' }]);
            throw failure;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(failure);
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      });

      it("a throwing callback's error reaches the caller unchanged, its writes roll back, the lock is released", async () => {
        const { name, key } = ctx.name('throws');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        class Custom extends Error {}
        const failure = new Custom('from the callback');
        const error = await instance
          .withLock(name, async (sql) => {
            await sql(`INSERT INTO ${table}_rows VALUES ('written under the lock')`);
            throw failure;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(failure);
        expect(await ctx.backdoor.query(`SELECT * FROM ${table}_rows`)).toEqual([]);
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        // A commit keeps the writes.
        await instance.withLock(name, async (sql) => sql(`INSERT INTO ${table}_rows VALUES ('kept')`));
        expect(await ctx.backdoor.query(`SELECT v FROM ${table}_rows`)).toEqual([{ v: 'kept' }]);
      });
    },
  );

  describe('values and errors', () => {
    it('withLock returns the callback value; tryWithLock wraps it; the lock is visible inside', async () => {
      const { name, key } = ctx.name('value');
      const instance = await ctx.open();
      expect(await instance.withLock(name, async () => ({ answer: 42 }))).toEqual({ answer: 42 });
      expect(await instance.tryWithLock(name, async () => 'v')).toEqual({ acquired: true, value: 'v' });
      const own = await instance.withLock(name, (sql) => ownLocks(sql, key));
      expect(own).toEqual([{ mode: 'ExclusiveLock', granted: true }]);
      expect(await instance.withLock(name, (sql) => ownLocks(sql, key), { shared: true })).toEqual([
        { mode: 'ShareLock', granted: true },
      ]);
    });

    it('an error thrown by the callback reaches the caller unchanged', async () => {
      const { name } = ctx.name('error');
      const instance = await ctx.open();
      const failure = new TypeError('boom');
      expect(
        await instance.withLock(name, async () => Promise.reject(failure)).catch((e: unknown) => e),
      ).toBe(failure);
      expect(
        await instance.tryWithLock(name, async () => Promise.reject(failure)).catch((e: unknown) => e),
      ).toBe(failure);
      // The lock was released with the rollback: a fresh try gets it.
      expect(await instance.tryWithLock(name, async () => 'again')).toEqual({
        acquired: true,
        value: 'again',
      });
    });
  });
}
