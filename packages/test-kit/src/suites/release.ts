import { describe, expect, it } from 'vitest';
import { holdLock, missing, pidOf, type SuiteContext } from '../context.ts';

/** Holding is visible to others; commit, rollback and a throwing callback all release. */
export function releaseSuite(ctx: SuiteContext): void {
  const noContention = missing(ctx.harness.capabilities, 'contention', 'one connection only: no second session to look from');

  describe('holding and releasing', () => {
    it('while held, pg_locks, isLocked and inspectLocks show the holder; after commit nothing is held', async () => {
      const { name, key } = ctx.name('held');
      const instance = await ctx.open();
      const observer = noContention ? instance : await ctx.open();
      const held = await holdLock(instance, name);
      try {
        expect(await ctx.backdoor.locksOn(key)).toEqual([{ pid: held.pid, granted: true, mode: 'ExclusiveLock' }]);
        if (!noContention) {
          expect(await observer.isLocked(name)).toBe(true);
          const rows = (await observer.inspectLocks()).filter((l) => l.key.form === 'bigint' && l.key.value === key);
          expect(rows).toMatchObject([{ pid: held.pid, granted: true, mode: 'exclusive', ownSession: false }]);
        }
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

    it('withLock returns the callback value; tryWithLock wraps it', async () => {
      const { name } = ctx.name('value');
      const instance = await ctx.open();
      expect(await instance.withLock(name, async () => ({ answer: 42 }))).toEqual({ answer: 42 });
      expect(await instance.tryWithLock(name, async () => 'v')).toEqual({ acquired: true, value: 'v' });
    });
  });
}
