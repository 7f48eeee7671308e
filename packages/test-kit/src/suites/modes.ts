import { LockDeadlockError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { holdLock, missing, pidOf, type SuiteContext } from '../context.ts';

/** Shared/exclusive compatibility and multi-key calls. */
export function modesSuite(ctx: SuiteContext): void {
  const noContention = missing(
    ctx.harness.capabilities,
    'contention',
    'one connection only: nothing can contend',
  );

  describe.skipIf(noContention)(
    `shared and exclusive${noContention ? ` (skipped: ${noContention})` : ''}`,
    () => {
      it('shared is compatible with shared (two backends hold it at once)', async () => {
        const { name, key } = ctx.name('shared');
        const [a, b] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(a, name, { shared: true });
        try {
          const other = await b.tryWithLock(name, async (sql) => pidOf(sql), { shared: true });
          expect(other.acquired).toBe(true);
          expect(other.acquired && other.value).not.toBe(held.pid);
        } finally {
          await held.release();
        }
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      });

      it('shared excludes exclusive, and exclusive excludes shared', async () => {
        const { name } = ctx.name('shared-exclusive');
        const [a, b] = [await ctx.open(), await ctx.open()];
        const shared = await holdLock(a, name, { shared: true });
        try {
          expect(await b.tryWithLock(name, async () => 'x')).toEqual({ acquired: false });
        } finally {
          await shared.release();
        }
        const exclusive = await holdLock(a, name);
        try {
          expect(await b.tryWithLock(name, async () => 'x', { shared: true })).toEqual({ acquired: false });
        } finally {
          await exclusive.release();
        }
      });
    },
  );

  describe.skipIf(noContention)(`several keys${noContention ? ` (skipped: ${noContention})` : ''}`, () => {
    it('{A, B} against {B, A} callers never deadlock', async () => {
      const a = ctx.name('multi-a').name;
      const b = ctx.name('multi-b').name;
      const [one, two] = [await ctx.open(), await ctx.open()];
      let sections = 0;
      const loop = async (instance: typeof one, keys: string[]) => {
        for (let i = 0; i < 15; i++) {
          await instance.withLock(keys, async (sql) => {
            await sql('SELECT pg_sleep(0.002)::text');
            sections++;
          });
        }
      };
      const results = await Promise.allSettled([loop(one, [a, b]), loop(two, [b, a])]);
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(failures.filter((f) => LockDeadlockError.is(f))).toEqual([]);
      expect(failures).toEqual([]);
      expect(sections).toBe(30);
    });

    it('a multi-key try is all or none, in withLock and inside a transaction', async () => {
      const first = ctx.name('all-or-none-1');
      const second = ctx.name('all-or-none-2');
      const [holder, contender] = [await ctx.open(), await ctx.open()];
      const held = await holdLock(holder, second.name);
      try {
        expect(await contender.tryWithLock([first.name, second.name], async () => 'x')).toEqual({
          acquired: false,
        });
        expect(await ctx.backdoor.locksOn(first.key)).toEqual([]);
        const inTx = await contender.transaction(async (tx) => {
          const got = await tx.tryLock([first.name, second.name]);
          const heldFirst = await ctx.backdoor.locksOn(first.key);
          // The transaction is still usable after the failed try.
          const [row] = await tx.sql('SELECT 1 AS one');
          return { got, heldFirst, one: row?.one };
        });
        expect(inTx).toEqual({ got: false, heldFirst: [], one: 1 });
      } finally {
        await held.release();
      }
      const both = await contender.tryWithLock([first.name, second.name], async () => [
        await ctx.backdoor.locksOn(first.key),
        await ctx.backdoor.locksOn(second.key),
      ]);
      expect(both.acquired).toBe(true);
      expect(both.acquired && both.value.map((locks) => locks.length)).toEqual([1, 1]);
    });
  });
}
