import { LockNotAcquiredError, LockUsageError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { Child, processTestTimeout } from '../child.ts';
import { holdLock, missing, outcome, pidOf, type SuiteContext, settlesWithin, sleep } from '../context.ts';

/** Mutual exclusion across processes, and try-lock under contention. */
export function exclusionSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noProcesses = ctx.noProcesses;
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');

  describe('mutual exclusion within one instance', () => {
    it('concurrent withLock on one key from one instance are never inside at once (a one-connection instance refuses the second with LockUsageError or runs it after)', async () => {
      const { name } = ctx.name('exclusion-one-instance');
      const instance = await ctx.open();
      let inside = 0;
      let most = 0;
      const section = async (): Promise<string> => {
        most = Math.max(most, ++inside);
        await sleep(50);
        inside--;
        return 'done';
      };
      const results = await settlesWithin(
        Promise.all(Array.from({ length: 3 }, () => outcome(instance.withLock(name, section)))),
        10_000,
        'the concurrent callers',
      );
      expect(most, 'callbacks inside the lock at once').toBe(1);
      for (const r of results) {
        expect(r.ok ? r.value : LockUsageError.is(r.error), String(r.ok || r.error)).toBe(
          r.ok ? 'done' : true,
        );
      }
      expect(results[0]).toEqual({ ok: true, value: 'done' });
    });
  });

  describe.skipIf(noProcesses)(
    `mutual exclusion across processes${noProcesses ? ` (skipped: ${noProcesses})` : ''}`,
    { timeout: processTestTimeout },
    () => {
      it('4 processes × 50 read-sleep-write sections: exact count, no overlapping intervals', async () => {
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_counter (id int PRIMARY KEY, n int NOT NULL)`);
        await ctx.backdoor.query(`INSERT INTO ${table}_counter VALUES (1, 0)`);
        await ctx.backdoor.query(
          `CREATE TABLE ${table}_intervals (pid int NOT NULL, worker int NOT NULL, entered timestamptz NOT NULL, exited timestamptz NOT NULL)`,
        );
        const { name } = ctx.name('exclusion');
        const processes = 4;
        const sections = 50;
        const sleepMs = 2;
        const children = Array.from(
          { length: processes },
          () => new Child(ctx.harness, ctx.url, 'increment', { key: name, table, sections, sleepMs }),
        );
        // The sections run one at a time across the processes: a few statements and the sleep each.
        await Promise.all(
          children.map((child) => child.expectSuccess(processes * sections * (sleepMs + 25))),
        );

        const [counter] = await ctx.backdoor.query(`SELECT n FROM ${table}_counter WHERE id = 1`);
        expect(counter?.n).toBe(processes * sections);
        const intervals = await ctx.backdoor.query<{
          pid: number;
          worker: number;
          entered: Date;
          exited: Date;
        }>(`SELECT pid, worker, entered, exited FROM ${table}_intervals ORDER BY entered`);
        expect(intervals).toHaveLength(processes * sections);
        // Every process ran sections, each on its own session: distinct backends straight to
        // PostgreSQL; through a transaction pooler the sessions share the pooler's server connections.
        expect(new Set(intervals.map((i) => i.worker)).size).toBe(processes);
        if (!ctx.viaPooler)
          expect(new Set(intervals.map((i) => i.pid)).size).toBeGreaterThanOrEqual(processes);
        let overlaps = 0;
        for (let i = 1; i < intervals.length; i++) {
          const previous = intervals[i - 1]!;
          const current = intervals[i]!;
          if (current.entered.getTime() < previous.exited.getTime()) overlaps++;
        }
        expect(overlaps).toBe(0);
      });
    },
  );

  describe.skipIf(noContention)(
    `try under contention${noContention ? ` (skipped: ${noContention})` : ''}`,
    () => {
      it('tryWithLock, tryLock and withLock({ timeoutMs: 0 }) report not-acquired from another backend', async () => {
        const { name, key } = ctx.name('try');
        const holder = await ctx.open();
        const contender = await ctx.open();
        const held = await holdLock(holder, name);
        try {
          const attempt = await contender.tryWithLock(name, async () => 'ran');
          expect(attempt).toEqual({ acquired: false });
          const inTx = await contender.transaction(async (tx) => ({
            got: await tx.tryLock(name),
            pid: await pidOf(tx.sql),
          }));
          expect(inTx.got).toBe(false);
          expect(inTx.pid).not.toBe(held.pid);
          const error = await contender
            .withLock(name, async () => 'ran', { timeoutMs: 0 })
            .catch((e: unknown) => e);
          expect(LockNotAcquiredError.is(error)).toBe(true);
          expect((error as LockNotAcquiredError).timeoutMs).toBe(0);
          expect((error as LockNotAcquiredError).key).toMatchObject({ form: 'bigint', value: key, name });
          expect(await ctx.backdoor.locksOn(key)).toEqual([
            { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
        } finally {
          await held.release();
        }
        // Released: the contender gets it now (through a transaction pooler possibly on the same backend).
        const after = await contender.tryWithLock(name, async (sql) => pidOf(sql));
        expect(after.acquired).toBe(true);
      });
    },
  );
}
