import {
  InvalidLockOptionsError,
  JOBS_TABLE_DDL,
  JOBS_TABLE_UPGRADE_DDL,
  JobTimedOutError,
  type RunOnceResult,
} from '@pglock/core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Backdoor } from '../backdoor.ts';
import { Child, processTestTimeout } from '../child.ts';
import {
  deferred,
  firstReason,
  missing,
  outcome,
  type SuiteContext,
  skipped,
  sleep,
  watchCrashes,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

// Serialises the one-time setup with the scheduling suite's (the same backdoor session lock).
const SETUP_KEY = '8120031911';

/** `pglock_jobs` with this version's columns (upgrading one an earlier run created). */
async function setUpTable(backdoor: Backdoor): Promise<void> {
  await backdoor.query('SELECT pg_advisory_lock($1::bigint)', [SETUP_KEY]);
  try {
    await backdoor.query(JOBS_TABLE_DDL);
    const [upgraded] = await backdoor.query(
      `SELECT 1 AS ok FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'pglock_jobs' AND column_name = 'last_error'`,
    );
    if (!upgraded) await backdoor.query(JOBS_TABLE_UPGRADE_DDL);
  } finally {
    await backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [SETUP_KEY]);
  }
}

interface JobRow {
  readonly outcome: string | null;
  readonly run_ms: string | null;
  readonly attempts: number;
  readonly attempt_period: Date | null;
  readonly last_error: string | null;
  readonly period_start: Date | null;
}

async function jobRow(backdoor: Backdoor, key: bigint): Promise<JobRow | undefined> {
  const [row] = await backdoor.query<Record<string, unknown>>(
    `SELECT outcome, run_ms::text AS run_ms, attempts, attempt_period, last_error, period_start
      FROM pglock_jobs WHERE key = $1::bigint`,
    [String(key)],
  );
  return row as JobRow | undefined;
}

/** The backend `pid` is back in its pool: idle outside any transaction, holding no advisory lock. */
async function expectHealthy(backdoor: Backdoor, pid: number): Promise<void> {
  await backdoor.waitFor(`backend ${pid} idle outside a transaction, no advisory lock`, async () => {
    const [row] = await backdoor.query<{ state: string | null; locks: number }>(
      `SELECT (SELECT state FROM pg_stat_activity WHERE pid = $1::int) AS state,
        (SELECT count(*)::int FROM pg_locks WHERE pid = $1::int AND locktype = 'advisory') AS locks`,
      [pid],
    );
    // A backend that is gone (a driver that closed it) holds nothing either.
    return (row?.state === 'idle' || row?.state === null) && row?.locks === 0;
  });
}

async function grantedOn(backdoor: Backdoor, key: bigint): Promise<number> {
  return (await backdoor.locksOn(key)).filter((lock) => lock.granted).length;
}

const rowsOf = async (backdoor: Backdoor, table: string) =>
  (
    await backdoor.query<{ worker: number; attempt: number }>(
      `SELECT worker, attempt FROM ${table}_rows ORDER BY worker, attempt`,
    )
  ).map((row) => `${row.worker}:${row.attempt}`);

/**
 * `runOnce`'s run limits (issue 24 item 5): `maxRunMs` ends a run that goes over it, whether or not
 * the job honours its signal, and frees its period; `retry` runs a throwing job again within its
 * period, counted across processes; every run records its outcome. Under `runLimits`.
 */
export function runLimitsSuite(ctx: SuiteContext): void {
  describe('runLimits', () => runLimitsTests(ctx));
}

function runLimitsTests(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );
  const noProcesses = firstReason(noBackdoor, ctx.noProcesses);
  const noCancel = firstReason(noBackdoor, missing(capabilities, 'abort', 'nothing can cancel a statement'));
  const timerTimeout = (capabilities.transactionSettings ?? []).includes('timeout');
  const noTerminate = firstReason(
    noCancel,
    missing(
      capabilities,
      'survivesTerminatedTransaction',
      'the driver kills the process when the ORM writes its ROLLBACK to a connection whose backend was terminated (porsager/postgres#1208, docs/reliability.md)',
    ),
  );

  beforeAll(() => setUpTable(ctx.backdoor));

  async function rowsTable(): Promise<string> {
    const table = ctx.table();
    await ctx.backdoor.query(`CREATE TABLE ${table}_rows (worker int NOT NULL, attempt int NOT NULL)`);
    return table;
  }

  const insert = (instance: AdapterInstance, tx: unknown, table: string, worker: number, attempt: number) =>
    instance.sqlOn(tx)(`INSERT INTO ${table}_rows (worker, attempt) VALUES ($1::int, $2::int)`, [
      worker,
      attempt,
    ]);

  describe('maxRunMs', () => {
    it.skipIf(noProcesses)(
      `a job that honours its signal: it aborts with JobTimedOutError, nothing it wrote commits, the run is recorded 'timed-out', and another process runs the period${skipped(noProcesses)}`,
      { timeout: processTestTimeout },
      async () => {
        const instance = await ctx.open();
        const table = await rowsTable();
        const { name, key } = ctx.name('max-run-honours');
        let reason: unknown;
        let pid = 0;
        const started = performance.now();
        const error = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 300 }, async (tx, { signal, attempt }) => {
            pid = Number((await instance.sqlOn(tx)('SELECT pg_backend_pid() AS pid'))[0]?.pid);
            await insert(instance, tx, table, 1, attempt);
            await new Promise((_, reject) => {
              signal.addEventListener('abort', () => {
                reason = signal.reason;
                reject(signal.reason);
              });
            });
          })
          .catch((e: unknown) => e);
        const took = performance.now() - started;
        expect(JobTimedOutError.is(error), String(error)).toBe(true);
        expect(error).toMatchObject({ code: 'JOB_TIMED_OUT', maxRunMs: 300, attempt: 1 });
        expect(reason, "the signal's reason is the error the call rejects with").toBe(error);
        expect((error as Error).message).toMatch(/maxRunMs \(300 ms\).*honour its signal/);
        expect(took).toBeGreaterThanOrEqual(290);
        expect(await rowsOf(ctx.backdoor, table)).toEqual([]);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        await expectHealthy(ctx.backdoor, pid);
        const row = await jobRow(ctx.backdoor, key);
        expect(row).toMatchObject({ outcome: 'timed-out', run_ms: '300', attempts: 1, period_start: null });
        expect(row?.last_error).toMatch(/maxRunMs/);

        const child = new Child(ctx.harness, ctx.url, 'runOnceCall', {
          key: name,
          table,
          options: { per: '1d' },
          throws: false,
        });
        const report = await child.next('done');
        await child.expectSuccess();
        expect(report).toMatchObject({ result: { ran: true, value: 'ran' }, attempts: [2] });
        expect((await rowsOf(ctx.backdoor, table)).length).toBe(1);
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({ outcome: 'ok', attempts: 2 });
      },
    );

    it.skipIf(noCancel)(
      `a job that ignores its signal while awaiting pg_sleep: the statement is cancelled, its next one fails, nothing commits, the period is free at once, and its connection goes back healthy${skipped(noCancel)}`,
      async () => {
        const [instance, other] = [await ctx.open(), await ctx.open()];
        const table = await rowsTable();
        const { name, key } = ctx.name('max-run-ignores-sleep');
        const finished = deferred<{ sleep: boolean; after: boolean }>();
        let pid = 0;
        const started = performance.now();
        const error = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 400 }, async (tx) => {
            const sql = instance.sqlOn(tx);
            pid = Number((await sql('SELECT pg_backend_pid() AS pid'))[0]?.pid);
            await insert(instance, tx, table, 1, 1);
            const slept = await outcome(sql('SELECT pg_sleep(30)'));
            const after = await outcome(insert(instance, tx, table, 1, 2));
            finished.resolve({ sleep: slept.ok, after: after.ok });
            return 'late';
          })
          .catch((e: unknown) => e);
        const took = performance.now() - started;
        expect(JobTimedOutError.is(error), String(error)).toBe(true);
        // Far below the 30 s sleep: the statement was cancelled (a loaded machine's cancel included).
        expect(took).toBeLessThan(15_000);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        const next = await other.locks.runOnce(name, { per: '1d' }, async (tx, { attempt }) => {
          await insert(instance, tx, table, 2, attempt);
          return 'next';
        });
        expect(next).toMatchObject({ ran: true, value: 'next' });
        expect(await finished.promise).toEqual({ sleep: false, after: false });
        expect(await rowsOf(ctx.backdoor, table)).toEqual(['2:2']);
        await expectHealthy(ctx.backdoor, pid);
        // The pool is fine: a later call on the same instance runs and commits.
        expect(
          await instance.withLock(ctx.name('after').name, async (sql) => (await sql('SELECT 1 AS one'))[0]),
        ).toEqual({
          one: 1,
        });
      },
    );

    it.skipIf(noBackdoor)(
      `a job that ignores its signal doing only JS work: the call answers at maxRunMs without waiting for it, the period runs elsewhere meanwhile, and its later statement fails${skipped(noBackdoor)}`,
      async () => {
        const [instance, other] = [await ctx.open(), await ctx.open()];
        const table = await rowsTable();
        const { name, key } = ctx.name('max-run-ignores-js');
        const finished = deferred<{ after: boolean }>();
        let settled = false;
        let pid = 0;
        const error = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 300 }, async (tx) => {
            pid = Number((await instance.sqlOn(tx)('SELECT pg_backend_pid() AS pid'))[0]?.pid);
            await insert(instance, tx, table, 1, 1);
            await sleep(6_000);
            const after = await outcome(insert(instance, tx, table, 1, 2));
            settled = true;
            finished.resolve({ after: after.ok });
            return 'late';
          })
          .catch((e: unknown) => e);
        expect(JobTimedOutError.is(error), String(error)).toBe(true);
        expect(settled, 'the call answered before the job settled').toBe(false);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        const next = await other.locks.runOnce(name, { per: '1d' }, async (tx) => {
          await insert(other, tx, table, 2, 2);
          return 'next';
        });
        expect(next).toMatchObject({ ran: true, value: 'next' });
        expect(settled, 'the period ran elsewhere while the job still ran').toBe(false);
        // Meanwhile its connection is out of the pool, in a failed transaction that holds no lock.
        const [meanwhile] = await ctx.backdoor.query<{ state: string; locks: number }>(
          `SELECT state, (SELECT count(*)::int FROM pg_locks WHERE pid = $1::int AND locktype = 'advisory') AS locks
            FROM pg_stat_activity WHERE pid = $1::int`,
          [pid],
        );
        expect(meanwhile).toEqual({ state: 'idle in transaction (aborted)', locks: 0 });
        expect(await finished.promise).toEqual({ after: false });
        expect(await rowsOf(ctx.backdoor, table)).toEqual(['2:2']);
        await expectHealthy(ctx.backdoor, pid);
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({ outcome: 'ok', attempts: 2 });
      },
    );

    it.skipIf(noTerminate)(
      `a job whose backend is terminated while it waits in JS: at maxRunMs the call rejects with JobTimedOutError, pglock writes nothing to the closed connection, nothing crashes or stays locked, and the period runs again${skipped(noTerminate)}`,
      async () => {
        const [instance, other] = [await ctx.open(), await ctx.open()];
        const crashes = watchCrashes();
        const { name, key } = ctx.name('max-run-terminated');
        let pid = 0;
        const error = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 500 }, async (tx, { signal }) => {
            pid = Number((await instance.sqlOn(tx)('SELECT pg_backend_pid() AS pid'))[0]?.pid);
            await ctx.backdoor.terminate(pid);
            await new Promise((_, reject) => {
              signal.addEventListener('abort', () => reject(signal.reason), { once: true });
            });
          })
          .catch((e: unknown) => e);
        expect(JobTimedOutError.is(error), String(error)).toBe(true);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        const next = await other.locks.runOnce(name, { per: '1d' }, async () => 'next');
        expect(next).toMatchObject({ ran: true, value: 'next' });
        // A write from a timer to the closed connection would have crashed the process by now.
        await sleep(100);
        expect(crashes.stop().map(String)).toEqual([]);
      },
    );

    it('on every adapter (one in-process connection included): a timed-out run writes nothing, and the next call runs its period as attempt 2', async () => {
      const instance = await ctx.open();
      const table = `pglock_rl_${Math.random().toString(36).slice(2, 10)}`;
      await instance.withLock(ctx.name('run-limits-ddl').name, async (sql) => {
        // An in-process database of its own has no jobs table yet (the backdoor made the shared one).
        if (noBackdoor) await sql(JOBS_TABLE_DDL);
        await sql(`CREATE TABLE ${table} (n int)`);
      });
      try {
        const { name } = ctx.name('max-run-anywhere');
        const error = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 200 }, async (tx, { signal }) => {
            await instance.sqlOn(tx)(`INSERT INTO ${table} VALUES (1)`);
            await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
          })
          .catch((e: unknown) => e);
        expect(JobTimedOutError.is(error), String(error)).toBe(true);
        const next = await instance.locks.runOnce(name, { per: '1d' }, async (tx, { attempt }) => {
          await instance.sqlOn(tx)(`INSERT INTO ${table} VALUES ($1::int)`, [attempt]);
          return attempt;
        });
        expect(next).toMatchObject({ ran: true, value: 2 });
        const rows = await instance.withLock(ctx.name('run-limits-read').name, (sql) =>
          sql(`SELECT n FROM ${table} ORDER BY n`),
        );
        expect(rows).toEqual([{ n: 2 }]);
      } finally {
        await instance.withLock(ctx.name('run-limits-drop').name, (sql) => sql(`DROP TABLE ${table}`));
      }
    });

    it.skipIf(!timerTimeout)(
      `a transaction with a timer (Prisma's timeout): maxRunMs beyond the default is budgeted, a shorter transaction.timeout is refused before any SQL${skipped(timerTimeout ? undefined : 'the adapter has no transaction timer')}`,
      async () => {
        const instance = await ctx.open();
        const { name } = ctx.name('max-run-budget');
        const before = instance.statementCount();
        const refused = await instance.locks
          .runOnce(name, { per: '1d', maxRunMs: 10_000, transaction: { timeout: 5_000 } }, async () => 'ran')
          .catch((e: unknown) => e);
        expect(InvalidLockOptionsError.is(refused), String(refused)).toBe(true);
        expect((refused as Error).message).toMatch(/transaction\.timeout \(5000 ms\) is shorter/);
        if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
        // Past Prisma's 5 s default: the transaction lasts as long as the run may.
        const result = await instance.locks.runOnce(name, { per: '1d', maxRunMs: 9_000 }, async (tx) => {
          await sleep(5_500);
          return (await instance.sqlOn(tx)('SELECT 1 AS one'))[0];
        });
        expect(result).toMatchObject({ ran: true, value: { one: 1 } });
      },
    );
  });

  describe('retry', () => {
    it.skipIf(noBackdoor)(
      `a throwing job runs again in the same call, delayMs apart, with its attempt; only the last attempt's writes commit, recorded 'ok'${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const table = await rowsTable();
        const { name, key } = ctx.name('retry-succeeds');
        const at: number[] = [];
        const result = await instance.locks.runOnce(
          name,
          { per: '1d', retry: { limit: 3, delayMs: 250 } },
          async (tx, { attempt }) => {
            at.push(performance.now());
            await insert(instance, tx, table, 1, attempt);
            if (attempt < 3) throw new Error(`attempt ${attempt}`);
            return attempt;
          },
        );
        expect(result).toMatchObject({ ran: true, value: 3 });
        expect(at).toHaveLength(3);
        for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(240);
        expect(await rowsOf(ctx.backdoor, table)).toEqual(['1:3']);
        const row = await jobRow(ctx.backdoor, key);
        expect(row).toMatchObject({ outcome: 'ok', attempts: 3, last_error: null });
        expect(row?.period_start?.getTime()).toBe(result.period.start.getTime());
        expect(row?.attempt_period?.getTime()).toBe(result.period.start.getTime());
        expect(
          await instance.locks.runOnce(name, { per: '1d', retry: { limit: 3 } }, async () => 'again'),
        ).toMatchObject({ ran: false, reason: 'done' });
      },
    );

    it.skipIf(noBackdoor)(
      `an attempt whose statement failed is retried and the retry commits (also where the ORM refuses to commit a transaction in which a statement failed)${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const table = await rowsTable();
        const { name, key } = ctx.name('retry-failed-statement');
        const result = await instance.locks.runOnce(
          name,
          { per: '1d', retry: { limit: 1 } },
          async (tx, { attempt }) => {
            await insert(instance, tx, table, 1, attempt);
            if (attempt === 1) await instance.sqlOn(tx)('SELECT 1 / 0 AS never');
            return attempt;
          },
        );
        expect(result).toMatchObject({ ran: true, value: 2 });
        expect(await rowsOf(ctx.backdoor, table)).toEqual(['1:2']);
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({ outcome: 'ok', attempts: 2 });
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
      },
    );

    it.skipIf(noProcesses)(
      `the limit holds across processes: after limit + 1 attempts the call rejects with the job's error, recorded 'failed', and a later call elsewhere in the period resolves 'failed'${skipped(noProcesses)}`,
      { timeout: processTestTimeout },
      async () => {
        const instance = await ctx.open();
        const table = await rowsTable();
        const { name, key } = ctx.name('retry-limit');
        const boom = new Error(`always fails: ${'x'.repeat(5_000)}`);
        const attempts: number[] = [];
        const error = await instance.locks
          .runOnce(name, { per: '1d', retry: { limit: 1, delayMs: 50 } }, async (tx, { attempt }) => {
            attempts.push(attempt);
            await insert(instance, tx, table, 1, attempt);
            throw boom;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(boom);
        expect(attempts).toEqual([1, 2]);
        expect(await rowsOf(ctx.backdoor, table)).toEqual([]);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        const row = await jobRow(ctx.backdoor, key);
        expect(row).toMatchObject({ outcome: 'failed', attempts: 2, period_start: null });
        expect(row?.last_error?.startsWith('Error: always fails: xxx')).toBe(true);
        expect(Array.from(row?.last_error ?? '').length).toBeLessThanOrEqual(2_000);

        const child = new Child(ctx.harness, ctx.url, 'runOnceCall', {
          key: name,
          table,
          options: { per: '1d', retry: { limit: 1 } },
          throws: false,
        });
        const report = await child.next('done');
        await child.expectSuccess();
        expect(report).toMatchObject({ result: { ran: false, reason: 'failed', attempts: 2 }, attempts: [] });
        // A higher limit in a later call gives the period more attempts (counted on from 2).
        const more = await instance.locks.runOnce(
          name,
          { per: '1d', retry: { limit: 2 } },
          async (tx, { attempt }) => {
            await insert(instance, tx, table, 3, attempt);
            return attempt;
          },
        );
        expect(more).toMatchObject({ ran: true, value: 3 });
        expect(await rowsOf(ctx.backdoor, table)).toEqual(['3:3']);
      },
    );

    it.skipIf(noBackdoor)(
      `a run past maxRunMs counts as an attempt and is not retried in its call; without retry, each later call runs a failed job again${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name } = ctx.name('retry-timed-out');
        const seen: number[] = [];
        const options = { per: '1d', maxRunMs: 200, retry: { limit: 1, delayMs: 0 } } as const;
        const first = await instance.locks
          .runOnce(name, options, async (_tx, { attempt, signal }) => {
            seen.push(attempt);
            await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
          })
          .catch((e: unknown) => e);
        expect(JobTimedOutError.is(first)).toBe(true);
        const boom = new Error('second attempt fails');
        const second = await instance.locks
          .runOnce(name, options, async (_tx, { attempt }) => {
            seen.push(attempt);
            throw boom;
          })
          .catch((e: unknown) => e);
        expect(second).toBe(boom);
        expect(seen).toEqual([1, 2]);
        const third = await instance.locks.runOnce(name, options, async () => 'never');
        expect(third).toMatchObject({ ran: false, reason: 'failed', attempts: 2 });

        // No retry: every call runs it again, the attempts counted on.
        const { name: plain, key } = ctx.name('no-retry');
        const attempts: number[] = [];
        for (let i = 0; i < 3; i++) {
          const error = await instance.locks
            .runOnce(plain, { per: '1d' }, async (_tx, { attempt }) => {
              attempts.push(attempt);
              throw new Error(`run ${i}`);
            })
            .catch((e: unknown) => e);
          expect((error as Error).message).toBe(`run ${i}`);
        }
        expect(attempts).toEqual([1, 2, 3]);
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({
          outcome: 'failed',
          attempts: 3,
          last_error: 'Error: run 2',
        });
      },
    );

    it.skipIf(noBackdoor)(
      `the call's signal ends the delay between attempts: no further attempt, the job's error, nothing left locked${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('retry-aborted');
        const controller = new AbortController();
        const boom = new Error('fails');
        const attempts: number[] = [];
        const started = performance.now();
        const running = instance.locks.runOnce(
          name,
          { per: '1d', signal: controller.signal, retry: { limit: 5, delayMs: 20_000 } },
          async (_tx, { attempt }) => {
            attempts.push(attempt);
            setTimeout(() => controller.abort(), 200);
            throw boom;
          },
        );
        expect(await running.catch((e: unknown) => e)).toBe(boom);
        expect(performance.now() - started).toBeLessThan(15_000);
        expect(attempts).toEqual([1]);
        expect(await grantedOn(ctx.backdoor, key)).toBe(0);
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({ outcome: 'failed', attempts: 1 });
      },
    );
  });

  it.skipIf(noBackdoor)(
    `each committed run records its duration and outcome${skipped(noBackdoor)}`,
    async () => {
      const instance = await ctx.open();
      const { name, key } = ctx.name('outcome');
      const result: RunOnceResult<string> = await instance.locks.runOnce(name, { per: '1d' }, async () => {
        await sleep(120);
        return 'ok';
      });
      expect(result).toMatchObject({ ran: true, value: 'ok' });
      const row = await jobRow(ctx.backdoor, key);
      expect(row).toMatchObject({ outcome: 'ok', attempts: 1, last_error: null });
      expect(Number(row?.run_ms)).toBeGreaterThanOrEqual(110);
      // Nested in a running transaction: recorded with it.
      const { name: nested, key: nestedKey } = ctx.name('outcome-nested');
      await instance.withLock(ctx.name('outcome-outer').name, () =>
        instance.locks.runOnce(nested, { per: '1d' }, async () => 'inner'),
      );
      expect(await jobRow(ctx.backdoor, nestedKey)).toMatchObject({ outcome: 'ok', attempts: 1 });
    },
  );

  it('bad maxRunMs and retry: InvalidLockOptionsError before any SQL, nested included', async () => {
    const instance = await ctx.open();
    const job = async () => 'ran';
    const refused = async (options: object, label: string, match?: RegExp) => {
      const before = instance.statementCount();
      const error = await instance.locks
        .runOnce('job', { per: '1h', ...options } as never, job)
        .catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(error), `${label}: ${String(error)}`).toBe(true);
      if (match) expect((error as Error).message, label).toMatch(match);
      if (capabilities.countsStatements) expect(instance.statementCount(), label).toBe(before);
    };
    for (const maxRunMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '1s', null]) {
      await refused({ maxRunMs }, `maxRunMs ${String(maxRunMs)}`, /maxRunMs must be an integer/);
    }
    for (const retry of [null, 3, 'twice', [1]]) {
      await refused({ retry }, `retry ${JSON.stringify(retry)}`, /retry must be an object/);
    }
    for (const limit of [-1, 1.5, Number.NaN, '3', 1_001, undefined]) {
      await refused({ retry: { limit } }, `retry.limit ${String(limit)}`, /retry\.limit must be an integer/);
    }
    for (const delayMs of [-1, Number.NaN, 0.5, '1s', 2 ** 31]) {
      await refused({ retry: { limit: 1, delayMs } }, `delayMs ${String(delayMs)}`, /retry\.delayMs must be/);
    }
    await refused({ retry: { limit: 1, tries: 2 } }, 'retry.tries', /unknown setting `retry\.tries`/);
    await refused({ lockAtMostFor: '10m' }, 'lockAtMostFor', /did you mean `maxRunMs`/);
    await refused({ retries: 3 }, 'retries', /did you mean `retry`/);
    // Nested in a running transaction: refused, not silently without a limit.
    const nested = await instance.withLock(ctx.name('bad-nested').name, async () => {
      const before = instance.statementCount();
      const errors = [];
      for (const options of [{ maxRunMs: 1_000 }, { retry: { limit: 1 } }]) {
        errors.push(
          await instance.locks.runOnce('job', { per: '1h', ...options }, job).catch((e: unknown) => e),
        );
      }
      return { errors, sent: instance.statementCount() - before };
    });
    for (const error of nested.errors) {
      expect(InvalidLockOptionsError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/inside a running transaction/);
    }
    if (capabilities.countsStatements) expect(nested.sent).toBe(0);
  });
}
