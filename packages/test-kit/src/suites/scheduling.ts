import {
  type Election,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  JOBS_TABLE_DDL,
  JOBS_TABLE_UPGRADE_DDL,
  type LeaderCampaign,
  type LeaderOptions,
  LockLostError,
  LockTableMissingError,
  LockUsageError,
  lockKey,
  type RunOnceResult,
  ScheduleMismatchError,
} from '@pglock/core';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Backdoor } from '../backdoor.ts';
import { Child, processTestTimeout } from '../child.ts';
import {
  deferred,
  firstReason,
  holdLock,
  missing,
  outcome,
  type SuiteContext,
  serverMajor,
  settlesWithin,
  skipped,
  sleep,
  withServerSettings,
} from '../context.ts';
import type { AdapterInstance, Sql } from '../harness.ts';

/** A database of the test server without `pglock_jobs`, for the missing-table paths. */
const EMPTY_DATABASE = 'pglock_kit_no_jobs_table';
/** A database of the test server whose `pglock_jobs` is the table of an older pglock (no `per_ms`). */
const LEGACY_DATABASE = 'pglock_kit_jobs_before_per_ms';
// Serialises the one-time setup of parallel test files (a backdoor session lock on a fixed key).
const SETUP_KEY = '8120031911';

/** `pglock_jobs` as pglock created it before `per_ms` (frozen: what an app upgrading still has). */
function legacyJobsTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
    key bigint PRIMARY KEY, name text NOT NULL, namespace text, period_start timestamptz,
    ran_at timestamptz, term bigint NOT NULL DEFAULT 0, elected_at timestamptz)`;
}

/** `pglock_jobs` as pglock created it with `per_ms`, before `cron` and the run columns (frozen). */
function perMsJobsTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
    key bigint PRIMARY KEY, name text NOT NULL, namespace text, per_ms bigint, period_start timestamptz,
    ran_at timestamptz, term bigint NOT NULL DEFAULT 0, elected_at timestamptz)`;
}

/**
 * Creates `pglock_jobs` in the test database (upgrading one an earlier run created), the empty
 * database beside it and the one with the older table, once.
 */
export async function setUpDatabases(backdoor: Backdoor): Promise<void> {
  await backdoor.query('SELECT pg_advisory_lock($1::bigint)', [SETUP_KEY]);
  try {
    await backdoor.query(JOBS_TABLE_DDL);
    // Only when needed: ALTER TABLE waits for every transaction on the table, and blocks the next ones.
    const wanted = [...JOBS_TABLE_UPGRADE_DDL.matchAll(/ADD COLUMN IF NOT EXISTS (\w+)/g)].map(([, c]) => c);
    const [present] = await backdoor.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'pglock_jobs' AND column_name = ANY ($1::text[])`,
      [wanted],
    );
    if (present?.n !== wanted.length) await backdoor.query(JOBS_TABLE_UPGRADE_DDL);
    for (const database of [EMPTY_DATABASE, LEGACY_DATABASE]) {
      const [found] = await backdoor.query('SELECT 1 AS ok FROM pg_database WHERE datname = $1', [database]);
      if (!found) await backdoor.query(`CREATE DATABASE ${database}`);
    }
    const legacy = await Backdoor.open(databaseUrl(inject('databaseUrl'), LEGACY_DATABASE));
    try {
      await legacy.query(legacyJobsTableDdl('pglock_jobs'));
    } finally {
      await legacy.close();
    }
  } finally {
    await backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [SETUP_KEY]);
  }
}

/** `url` (the database, or a pooler in front of it) with another database name. */
function databaseUrl(url: string, database: string): string {
  const other = new URL(url);
  other.pathname = `/${database}`;
  return other.href;
}

/** `url` on the database whose `pglock_jobs` is an older pglock's (no `per_ms`, no `identity`). */
export function legacyDatabaseUrl(url: string): string {
  return databaseUrl(url, LEGACY_DATABASE);
}

export function emptyDatabaseUrl(url: string): string {
  return databaseUrl(url, EMPTY_DATABASE);
}

/** A server timestamp (`now()`, `clock_timestamp()`) in integer epoch milliseconds, as periods are cut. */
async function epochMs(sql: Sql, timestamp: 'now()' | 'clock_timestamp()'): Promise<number> {
  const [row] = await sql(`SELECT floor(extract(epoch FROM ${timestamp}) * 1000)::bigint::text AS ms`);
  return Number(row?.ms);
}

/** Resolves once the server's clock has passed the end of the period of `per` that holds `ms`. */
async function pastBoundary(backdoor: Backdoor, ms: number, per: number): Promise<void> {
  const boundary = ms - (ms % per) + per;
  const clock: Sql = (text, values) => backdoor.query(text, values);
  await backdoor.waitFor(
    `the server's clock past ${new Date(boundary).toISOString()}`,
    async () => (await epochMs(clock, 'clock_timestamp()')) > boundary,
  );
}

/** The run's `now()` (epoch ms) lies in its period, `[start, end)`. */
function expectNowInPeriod(result: RunOnceResult<number>, route: string): void {
  // Soft: a test reports every route that fails, not only the first.
  expect.soft(result.ran, route).toBe(true);
  if (!result.ran) return;
  const { start, end } = result.period;
  const at = `${route}: now() ${new Date(result.value).toISOString()} in [${start.toISOString()}, ${end.toISOString()})`;
  expect.soft(result.value >= start.getTime() && result.value < end.getTime(), at).toBe(true);
}

function leaderOf(instance: AdapterInstance): (name: string, options: LeaderOptions) => LeaderCampaign {
  const start = instance.locks.leader;
  if (start === undefined) throw new Error('the adapter has no leader');
  return start;
}

interface Term {
  readonly who: string;
  readonly term: number;
  readonly elected: number;
  ended?: number;
  reason?: unknown;
}

/** Records every election of the campaigns it hands `onElected` to, and when each term ended. */
function elections() {
  const terms: Term[] = [];
  return {
    terms,
    on(who: string) {
      return ({ term, signal }: Election) => {
        const entry: Term = { who, term, elected: performance.now() };
        terms.push(entry);
        signal.addEventListener('abort', () => {
          entry.ended = performance.now();
          entry.reason = signal.reason;
        });
      };
    },
  };
}

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

/**
 * `runOnce` (once per period, across processes) and `leader` (one leader, fencing terms), under
 * `scheduling` (`vitest -t scheduling`).
 */
export function schedulingSuite(ctx: SuiteContext): void {
  describe('scheduling', () => schedulingTests(ctx));
}

function schedulingTests(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noProcesses = ctx.noProcesses;
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );
  const noSession =
    missing(capabilities, 'session', 'the adapter cannot pin a connection for a session lock') ??
    (ctx.viaPooler ? 'a transaction-mode pooler cannot hold session locks (checked below)' : undefined);
  const noPool = firstReason(
    noContention,
    missing(capabilities, 'concurrentCalls', 'one client: the instance runs one transaction at a time'),
  );
  const noPoolWait = firstReason(
    missing(capabilities, 'concurrentCalls', 'one client: the instance runs one transaction at a time'),
    capabilities.sessionConnection === 'own'
      ? 'a campaign opens a connection of its own: there is no pool to wait for'
      : undefined,
  );

  beforeAll(() => setUpDatabases(ctx.backdoor));

  describe('runOnce', () => {
    it.skipIf(noBackdoor)(
      `runs once per period: done after it ran, and a throwing run uses up nothing${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name } = ctx.name('run-once');
        const boom = new Error('boom');
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (n int NOT NULL)`);
        const write = async (tx: unknown) => {
          await instance.sqlOn(tx)(`INSERT INTO ${table}_rows VALUES (1)`);
        };
        const failed = await instance.locks
          .runOnce(name, { per: '1h' }, async (tx) => {
            await write(tx);
            throw boom;
          })
          .catch((e: unknown) => e);
        expect(failed).toBe(boom);
        expect(await ctx.backdoor.query(`SELECT n FROM ${table}_rows`)).toEqual([]);

        const first = await instance.locks.runOnce(name, { per: '1h' }, async (tx, { period }) => {
          await write(tx);
          return period;
        });
        expect(first.ran).toBe(true);
        const { period } = first;
        expect(first.ran && first.value).toEqual(period);
        expect(period.end.getTime() - period.start.getTime()).toBe(3_600_000);
        expect(period.start.getTime() % 3_600_000).toBe(0);
        const [server] = await ctx.backdoor.query<{ now: Date }>('SELECT now()');
        expect(server!.now.getTime()).toBeGreaterThanOrEqual(period.start.getTime());

        let ranAgain = false;
        const second = await instance.locks.runOnce(name, { per: 3_600_000 }, async () => {
          ranAgain = true;
        });
        expect(second).toEqual({ ran: false, reason: 'done', period });
        expect(ranAgain).toBe(false);
        expect(await ctx.backdoor.query(`SELECT n FROM ${table}_rows`)).toEqual([{ n: 1 }]);
        const [row] = await ctx.backdoor.query<{ key: string; name: string; period_start: Date }>(
          'SELECT key::text, name, period_start FROM pglock_jobs WHERE key = $1::bigint',
          [String((lockKey(name) as { value: bigint }).value)],
        );
        expect(row).toEqual({
          key: String((lockKey(name) as { value: bigint }).value),
          name,
          period_start: period.start,
        });
      },
    );

    describe.skipIf(noContention)(`busy${noContention ? ` (skipped: ${noContention})` : ''}`, () => {
      it("'busy' while another instance runs it (no wait), 'done' once that run committed; timeoutMs waits", async () => {
        const { name } = ctx.name('run-once-busy');
        const [runner, other] = [await ctx.open(), await ctx.open()];
        const entered = deferred();
        const leave = deferred();
        const running = runner.locks.runOnce(name, { per: '1d' }, async () => {
          entered.resolve();
          await leave.promise;
          return 'first';
        });
        await entered.promise;
        const started = performance.now();
        const busy = await other.locks.runOnce(name, { per: '1d' }, async () => 'second');
        expect(busy).toMatchObject({ ran: false, reason: 'busy' });
        expect(performance.now() - started).toBeLessThan(1_000);
        expect(busy.period.end.getTime() - busy.period.start.getTime()).toBe(86_400_000);
        expect(busy.period.start.getUTCHours()).toBe(0);

        const waiting = other.locks.runOnce(name, { per: '1d', timeoutMs: 10_000 }, async () => 'second');
        await new Promise((resolve) => setTimeout(resolve, 100));
        leave.resolve();
        expect(await running).toMatchObject({ ran: true, value: 'first' });
        expect(await waiting).toMatchObject({ ran: false, reason: 'done' });
      });

      it('factory defaults: the namespace keys it; a default timeoutMs or shared does not make it wait or share', async () => {
        const namespace = `kit-${Math.random().toString(36).slice(2)}`;
        const { name } = ctx.name('run-once-defaults');
        const [holder, caller] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(holder, lockKey(name, { namespace }));
        try {
          const locks = caller.advisoryLocks({ namespace, timeoutMs: 30_000, shared: true });
          const started = performance.now();
          const result = await locks.runOnce(name, { per: '1h' }, async () => 'ran');
          expect(result).toMatchObject({ ran: false, reason: 'busy' });
          expect(performance.now() - started).toBeLessThan(5_000);
        } finally {
          await held.release();
        }
        const locks = caller.advisoryLocks({ namespace });
        expect(await locks.runOnce(name, { per: '1h' }, async () => 'ran')).toMatchObject({ ran: true });
        const [row] = await ctx.backdoor.query('SELECT namespace FROM pglock_jobs WHERE key = $1::bigint', [
          String((lockKey(name, { namespace }) as { value: bigint }).value),
        ]);
        expect(row).toEqual({ namespace });
      });
    });

    it.skipIf(noBackdoor)(
      `nested in a running withLock: the record commits (or rolls back) with that transaction${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name } = ctx.name('run-once-nested');
        const outer = ctx.name('run-once-outer').name;
        const fail = new Error('outer fails');
        const error = await instance
          .withLock(outer, async () => {
            const inner = await instance.locks.runOnce(name, { per: '1h' }, async () => 'inner');
            expect(inner).toMatchObject({ ran: true, value: 'inner' });
            throw fail;
          })
          .catch((e: unknown) => e);
        expect(error).toBe(fail);
        // The outer transaction rolled back, and the period's record with it.
        const again = await instance.withLock(outer, () =>
          instance.locks.runOnce(name, { per: '1h' }, async () => 'again'),
        );
        expect(again).toMatchObject({ ran: true, value: 'again' });
        expect(await instance.locks.runOnce(name, { per: '1h' }, async () => 'third')).toMatchObject({
          ran: false,
          reason: 'done',
        });
      },
    );

    it.skipIf(noPool)(
      `issue 23.3: found busy in withLock callbacks that hold every pooled connection, each settles 'busy' on its own connection (its transaction's period)${skipped(noPool)}`,
      async () => {
        const { name } = ctx.name('run-once-busy-pool');
        const holder = await ctx.open();
        const instance = await ctx.open({ max: 3 });
        const held = await holdLock(holder, lockKey(name));
        // Short periods: each callback asks after a boundary that its transaction began before, so a
        // period read anywhere else (the pool, another instance) says a later period than its own.
        const per = 400;
        try {
          // Every callback holds its pooled connection before any runOnce starts: none is left over.
          const began: number[] = [];
          let arrived = 0;
          const all = deferred();
          const calls = [0, 1, 2].map((i) =>
            outcome(
              instance.withLock(ctx.name(`run-once-busy-pool-outer-${i}`).name, async (sql) => {
                began[i] = await epochMs(sql, 'now()');
                if (++arrived === 3) all.resolve();
                await all.promise;
                await pastBoundary(ctx.backdoor, Math.max(...began), per);
                return instance.locks.runOnce(name, { per }, async () => 'ran');
              }),
            ),
          );
          const results = await settlesWithin(
            Promise.all(calls),
            30_000,
            'three runOnce calls nested in withLock on a pool of 3, finding the job busy,',
          );
          results.forEach((result, i) => {
            expect(result).toMatchObject({ ok: true, value: { ran: false, reason: 'busy' } });
            const { period } = (result as { value: RunOnceResult<string> }).value;
            const own = `the period of callback ${i}'s transaction (began ${new Date(began[i] as number).toISOString()}), got [${period.start.toISOString()}, ${period.end.toISOString()})`;
            expect(began[i]! >= period.start.getTime() && began[i]! < period.end.getTime(), own).toBe(true);
          });
        } finally {
          await held.release();
        }
      },
    );

    it.skipIf(noBackdoor)(
      `issue 23.4: now() in the job lies in its period, also when the claim comes after a boundary its transaction began before${skipped(noBackdoor)}`,
      async () => {
        // Short periods, so that a boundary comes soon; nothing below depends on how soon.
        const per = 400;
        const instance = await ctx.open();
        const job = async (tx: unknown) => epochMs(instance.sqlOn(tx), 'now()');
        // Nested, late in a transaction: withLock began before a boundary, its runOnce claims after it.
        const nested = ctx.name('run-once-clock-nested').name;
        const late = await instance.withLock(ctx.name('run-once-clock-outer').name, async (sql) => {
          await pastBoundary(ctx.backdoor, await epochMs(sql, 'now()'), per);
          return instance.locks.runOnce(nested, { per }, job);
        });
        expectNowInPeriod(late, 'nested in a withLock that began in the period before');
        if (noContention) return;
        // Alone, after a wait: its transaction began, then waited for the lock past a boundary.
        const { name, key } = ctx.name('run-once-clock-waited');
        const held = await holdLock(await ctx.open(), lockKey(name));
        try {
          const waiting = instance.locks.runOnce(name, { per, timeoutMs: 30_000 }, job);
          await ctx.backdoor.waitForWaiters(key, 1);
          const [pid] = await ctx.backdoor.waitersOn(key);
          const [began] = await ctx.backdoor.query<{ ms: string }>(
            'SELECT floor(extract(epoch FROM xact_start) * 1000)::bigint::text AS ms FROM pg_stat_activity WHERE pid = $1::int',
            [pid],
          );
          await pastBoundary(ctx.backdoor, Number(began?.ms), per);
          await held.release();
          expectNowInPeriod(await waiting, 'a wait for the lock across a boundary');
        } finally {
          await held.release();
        }
      },
    );

    it.skipIf(noBackdoor)(
      `issue 23.5: one name is one schedule: another per is ScheduleMismatchError naming both, and nothing runs; the row records per${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('run-once-schedule');
        const storedPer = async () =>
          (
            await ctx.backdoor.query<{ per: string | null }>(
              'SELECT per_ms::text AS per FROM pglock_jobs WHERE key = $1::bigint',
              [String(key)],
            )
          )[0]?.per;
        expect(await instance.locks.runOnce(name, { per: 1_000 }, async () => 'ran')).toMatchObject({
          ran: true,
        });
        let ran = false;
        const error = await instance.locks
          .runOnce(name, { per: '1d' }, async () => {
            ran = true;
          })
          .catch((e: unknown) => e);
        expect(error).toMatchObject({
          name: 'ScheduleMismatchError',
          code: 'SCHEDULE_MISMATCH',
          perMs: 86_400_000,
          storedPerMs: 1_000,
        });
        expect(ScheduleMismatchError.is(error)).toBe(true);
        expect((error as ScheduleMismatchError).key).toMatchObject({ name });
        expect((error as Error).message).toContain("'1d'");
        expect((error as Error).message).toContain("'1s'");
        expect(ran).toBe(false);
        expect(await storedPer()).toBe('1000');
        // The same schedule goes on; the lock was released.
        const same = await instance.locks.runOnce(name, { per: '1s' }, async () => 'ran');
        expect(same.period.end.getTime() - same.period.start.getTime()).toBe(1_000);
        expect(await instance.isLocked(name)).toBe(false);
        // The documented reset moves the name to another schedule.
        await ctx.backdoor.query(
          'UPDATE pglock_jobs SET per_ms = NULL, period_start = NULL WHERE key = $1::bigint',
          [String(key)],
        );
        expect(await instance.locks.runOnce(name, { per: '1d' }, async () => 'daily')).toMatchObject({
          ran: true,
          value: 'daily',
        });
        expect(await storedPer()).toBe('86400000');
      },
    );

    it.skipIf(noBackdoor)(
      `issue 23.5, 24.7: a table from an older pglock (no per_ms; no cron) is LockTableMissingError naming the column, with the upgrade; upgraded, its rows keep working${skipped(noBackdoor)}`,
      async () => {
        const legacy = await ctx.harness.open(databaseUrl(ctx.url, LEGACY_DATABASE));
        try {
          const { name } = ctx.name('run-once-legacy');
          let ran = false;
          const error = await legacy.locks
            .runOnce(name, { per: '1h' }, async () => {
              ran = true;
            })
            .catch((e: unknown) => e);
          expect(error).toMatchObject({
            name: 'LockTableMissingError',
            column: 'per_ms',
            ddl: JOBS_TABLE_UPGRADE_DDL,
          });
          expect(LockTableMissingError.is(error)).toBe(true);
          expect((error as Error).message).toContain(JOBS_TABLE_UPGRADE_DDL);
          expect(ran).toBe(false);
          // Rolled back, nothing locked, the connection usable.
          expect(await legacy.withLock(name, async () => 'ok', { timeoutMs: 0 })).toBe('ok');
          expect(await legacy.isLocked(name)).toBe(false);
        } finally {
          await legacy.close();
        }
        // The upgrade, on such a table holding a row an older pglock wrote: from before per_ms, and
        // from the version with per_ms (before cron), whose table runOnce names the first column missing.
        for (const [generation, ddl] of [
          ['v1', legacyJobsTableDdl],
          ['v2', perMsJobsTableDdl],
        ] as const) {
          await upgradedTableRuns(generation, ddl);
        }
      },
    );

    /** A table of an older generation, with a row of that generation, upgraded: its row runs on. */
    async function upgradedTableRuns(generation: string, ddl: (table: string) => string): Promise<void> {
      const schema = `pglock_kit_${generation}_${Math.random().toString(36).slice(2, 10)}`;
      const { name, key } = ctx.name('run-once-upgraded');
      await ctx.backdoor.query(`CREATE SCHEMA ${schema}`);
      try {
        await ctx.backdoor.query(ddl(`${schema}.pglock_jobs`));
        await ctx.backdoor.query(
          `INSERT INTO ${schema}.pglock_jobs (key, name, period_start, ran_at) VALUES ($1::bigint, $2, to_timestamp(0), to_timestamp(0))`,
          [String(key), name],
        );
        if (generation === 'v2') {
          // Before the upgrade: the first column the claim names that the table lacks.
          const instance = await ctx.open();
          const before = await instance
            .withLock(ctx.name('run-once-upgraded-outer').name, async (sql) => {
              await sql(`SET LOCAL search_path TO ${schema}`);
              return instance.locks.runOnce(name, { per: '1h' }, async () => 'ran');
            })
            .catch((e: unknown) => e);
          expect(before).toMatchObject({
            name: 'LockTableMissingError',
            column: 'cron',
            ddl: JOBS_TABLE_UPGRADE_DDL,
          });
          expect((before as Error).message).toContain('no column cron');
        }
        // As documented, twice: it is idempotent.
        await ctx.backdoor.query(
          `BEGIN; SET LOCAL search_path TO ${schema}; ${JOBS_TABLE_UPGRADE_DDL} ${JOBS_TABLE_UPGRADE_DDL} COMMIT;`,
        );
        const instance = await ctx.open();
        const run = await instance.withLock(ctx.name('run-once-upgraded-outer').name, async (sql) => {
          await sql(`SET LOCAL search_path TO ${schema}`);
          return instance.locks.runOnce(name, { per: '1h' }, async () => 'ran');
        });
        expect(run).toMatchObject({ ran: true, value: 'ran' });
        const [row] = await ctx.backdoor.query<{ per: string; start: Date }>(
          `SELECT per_ms::text AS per, period_start AS start FROM ${schema}.pglock_jobs WHERE key = $1::bigint`,
          [String(key)],
        );
        expect(row).toEqual({ per: '3600000', start: run.period.start });
      } finally {
        await ctx.backdoor.query(`DROP SCHEMA ${schema} CASCADE`);
      }
    }

    it('bad input: InvalidLockOptionsError / InvalidLockKeyError before any SQL', async () => {
      const instance = await ctx.open();
      const before = instance.statementCount();
      const job = async () => 'ran';
      for (const per of [0, -1, 1.5, 2 ** 31, '1w', '1.5h', '30d', ' 1h', '', null, undefined]) {
        const error = await instance.locks
          .runOnce('job', { per: per as never }, job)
          .catch((e: unknown) => e);
        expect(InvalidLockOptionsError.is(error), String(per)).toBe(true);
      }
      for (const options of [{ per: '1h', timeoutMs: -1 }, { per: '1h', namespace: '' }, null, undefined]) {
        const error = await instance.locks.runOnce('job', options as never, job).catch((e: unknown) => e);
        expect(isInputError(error), JSON.stringify(options)).toBe(true);
      }
      for (const name of ['', 42, null]) {
        const error = await instance.locks
          .runOnce(name as never, { per: '1h' }, job)
          .catch((e: unknown) => e);
        expect(InvalidLockKeyError.is(error), String(name)).toBe(true);
      }
      const noFn = await instance.locks
        .runOnce('job', { per: '1h' }, 'job' as never)
        .catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(noFn)).toBe(true);
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });

    it('a missing table is LockTableMissingError with the DDL (never a raw 42P01), and nothing stays locked', async () => {
      const instance = await ctx.harness.open(emptyDatabaseUrl(ctx.url));
      try {
        const { name } = ctx.name('run-once-missing');
        let ran = false;
        const error = await instance.locks
          .runOnce(name, { per: '1h' }, async () => {
            ran = true;
          })
          .catch((e: unknown) => e);
        expect(LockTableMissingError.is(error)).toBe(true);
        expect(ran).toBe(false);
        expect((error as LockTableMissingError).ddl).toBe(JOBS_TABLE_DDL);
        expect((error as Error).message).toContain(JOBS_TABLE_DDL);
        expect((error as LockTableMissingError).key).toMatchObject({ name });
        // The failed transaction was rolled back and its connection is usable again.
        expect(await instance.withLock(name, async () => 'ok', { timeoutMs: 0 })).toBe('ok');
        expect(await instance.isLocked(name)).toBe(false);
      } finally {
        await instance.close();
      }
      // Nested: the savepoint is rolled back, and the outer transaction goes on (where the ORM lets it).
      if (ctx.harness.capabilities.nestedFailureRecovers === false) {
        console.info(
          `[${ctx.harness.name}] nested missing table skipped: the ORM rolls its whole transaction back`,
        );
        return;
      }
      const nested = await ctx.open();
      const outer = ctx.name('run-once-missing-outer').name;
      const { name } = ctx.name('run-once-missing-nested');
      const result = await nested.withLock(outer, async (sql) => {
        await sql('SET LOCAL search_path TO pglock_kit_nowhere');
        const inner = await nested.locks
          .runOnce(name, { per: '1h' }, async () => 'ran')
          .catch((e: unknown) => e);
        await sql('SELECT 1');
        return inner;
      });
      expect(LockTableMissingError.is(result)).toBe(true);
    });
  });

  describe.skipIf(noProcesses)(
    `runOnce across processes${noProcesses ? ` (skipped: ${noProcesses})` : ''}`,
    { timeout: processTestTimeout },
    () => {
      it('6 processes calling every 100–200 ms for 4.5 s: exactly one run in every period', async () => {
        const table = ctx.table();
        const per = 1_000;
        await ctx.backdoor.query(
          `CREATE TABLE ${table}_rows (worker int NOT NULL, period_start timestamptz NOT NULL, at timestamptz NOT NULL)`,
        );
        const { name } = ctx.name('run-once-processes');
        // The backdoor holds the gate until every process waits for it, so all six call together.
        const gate = ctx.name('run-once-gate');
        await ctx.backdoor.query('SELECT pg_advisory_lock($1::bigint)', [String(gate.key)]);
        const children = Array.from(
          { length: 6 },
          () =>
            new Child(ctx.harness, ctx.url, 'runOnceLoop', {
              key: name,
              gate: gate.name,
              table,
              per,
              ms: 4_500,
            }),
        );
        try {
          await Promise.all(children.map((child) => child.next('ready')));
          await ctx.backdoor.waitForWaiters(gate.key, 6);
        } finally {
          await ctx.backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [String(gate.key)]);
        }
        const reports = await Promise.all(children.map((child) => child.next('done', 4_500 + 5_000)));
        await Promise.all(children.map((child) => child.expectSuccess()));

        const rows = await ctx.backdoor.query<{ worker: number; period_start: Date; at: Date }>(
          `SELECT worker, period_start, at FROM ${table}_rows ORDER BY at`,
        );
        const runs = new Map<number, number>();
        for (const row of rows) {
          const start = row.period_start.getTime();
          runs.set(start, (runs.get(start) ?? 0) + 1);
          // The run happened in its period, on the server's clock.
          expect(start % per).toBe(0);
          expect(row.at.getTime()).toBeGreaterThanOrEqual(start);
          expect(row.at.getTime()).toBeLessThan(start + per + 1_000);
        }
        expect([...runs.values()].filter((count) => count > 1)).toEqual([]);
        const seen = reports.flatMap((report) => report.periods as number[]);
        const first = Math.min(...seen);
        const last = Math.max(...seen);
        // Every period the callers spanned has its run; the first and last may have seen only a busy tail.
        for (let start = first + per; start < last; start += per)
          expect(runs.get(start), new Date(start).toISOString()).toBe(1);
        expect(runs.size).toBeGreaterThanOrEqual(4);
        const counts = reports.map((report) => report.counts as { ran: number; done: number; busy: number });
        expect(counts.reduce((sum, c) => sum + c.ran, 0)).toBe(rows.length);
        expect(counts.reduce((sum, c) => sum + c.done + c.busy, 0)).toBeGreaterThan(0);
        expect(new Set(rows.map((row) => row.worker)).size).toBeGreaterThan(1);
      });

      it('a job whose process is SIGKILLed mid-run uses up nothing: the next caller runs it', async () => {
        const table = ctx.table();
        await ctx.backdoor.query(
          `CREATE TABLE ${table}_rows (worker int NOT NULL, period_start timestamptz NOT NULL, at timestamptz NOT NULL)`,
        );
        const { name, key } = ctx.name('run-once-killed');
        const child = new Child(ctx.harness, ctx.url, 'runOnceHang', { key: name, table });
        await child.next('running');
        expect((await ctx.backdoor.locksOn(key)).filter((lock) => lock.granted)).toHaveLength(1);
        child.kill('SIGKILL');
        const instance = await ctx.open();
        const result = await instance.locks.runOnce(name, { per: '1h', timeoutMs: 10_000 }, async (tx) => {
          await instance.sqlOn(tx)(`INSERT INTO ${table}_rows VALUES (0, now(), now())`);
          return 'after the kill';
        });
        expect(result).toMatchObject({ ran: true, value: 'after the kill' });
        // The killed run's row was rolled back with its transaction.
        expect(await ctx.backdoor.query(`SELECT worker FROM ${table}_rows`)).toEqual([{ worker: 0 }]);
      });
    },
  );

  describe.skipIf(noSession)(`leader${noSession ? ` (skipped: ${noSession})` : ''}`, () => {
    it('two campaigns: one leader; its backend terminated → the standby leads with a greater term; then back', async () => {
      const { name, key } = ctx.name('leader');
      const [one, two] = [await ctx.open(), await ctx.open()];
      const log = elections();
      const options = { heartbeatMs: 200, retryMs: 50 };
      const a = leaderOf(one)(name, { ...options, onElected: log.on('a') });
      const b = leaderOf(two)(name, { ...options, onElected: log.on('b') });
      try {
        await ctx.backdoor.waitFor('a leader', async () => log.terms.length === 1);
        await ctx.backdoor.waitForWaiters(key, 1);
        const [leading, standby] = log.terms[0]!.who === 'a' ? [a, b] : [b, a];
        expect(leading.isLeader).toBe(true);
        expect(leading.term).toBe(log.terms[0]!.term);
        expect(standby.isLeader).toBe(false);
        expect(standby.term).toBeUndefined();

        const [holder] = (await ctx.backdoor.locksOn(key)).filter((lock) => lock.granted);
        await ctx.backdoor.query('SELECT pg_terminate_backend($1)', [holder!.pid]);
        await ctx.backdoor.waitFor('the standby elected', async () => log.terms.length === 2);
        const [lost, next] = log.terms as [Term, Term];
        expect(next.who).not.toBe(lost.who);
        expect(next.term).toBeGreaterThan(lost.term);
        // A port without connection events notices the loss at its next heartbeat, which may come
        // after the standby's election (PostgreSQL freed the lock either way).
        await ctx.backdoor.waitFor('the deposed leader told', async () => lost.reason !== undefined);
        expect(LockLostError.is(lost.reason)).toBe(true);
        expect(leading.isLeader).toBe(false);
        expect(standby.term).toBe(next.term);

        // The deposed one campaigns again and waits; when the new leader stops, it leads again.
        await ctx.backdoor.waitForWaiters(key, 1);
        await standby.stop();
        await ctx.backdoor.waitFor('the first elected again', async () => log.terms.length === 3);
        expect(log.terms[2]).toMatchObject({ who: lost.who });
        expect(log.terms[2]!.term).toBeGreaterThan(next.term);
        const [row] = await ctx.backdoor.query('SELECT term::int FROM pglock_jobs WHERE key = $1::bigint', [
          String(key),
        ]);
        expect(row).toEqual({ term: log.terms[2]!.term });
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('stop() resigns after the callback settled; the standby is elected only then', async () => {
      const { name, key } = ctx.name('leader-stop');
      const [one, two] = [await ctx.open(), await ctx.open()];
      let cleanedUp = 0;
      let electedB = 0;
      let reason: unknown;
      const a = leaderOf(one)(name, {
        onElected: async ({ signal }) => {
          await new Promise((resolve) => signal.addEventListener('abort', resolve));
          reason = signal.reason;
          await new Promise((resolve) => setTimeout(resolve, 150));
          cleanedUp = performance.now();
        },
      });
      await ctx.backdoor.waitFor('a elected', async () => a.isLeader);
      const b = leaderOf(two)(name, {
        onElected: () => {
          electedB = performance.now();
        },
      });
      try {
        await ctx.backdoor.waitForWaiters(key, 1);
        await a.stop();
        expect(cleanedUp).toBeGreaterThan(0);
        expect(reason).toMatchObject({ name: 'AbortError' });
        expect(a.isLeader).toBe(false);
        await ctx.backdoor.waitFor('b elected', async () => b.isLeader);
        expect(electedB).toBeGreaterThanOrEqual(cleanedUp);
        expect(await a.stop()).toBeUndefined();
      } finally {
        await b.stop();
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('an onElected that throws goes to onError; the campaign resigns and is elected again', async () => {
      const { name } = ctx.name('leader-throws');
      const instance = await ctx.open();
      const errors: unknown[] = [];
      const terms: number[] = [];
      const boom = new Error('boom');
      const campaign = leaderOf(instance)(name, {
        retryMs: 20,
        onElected: ({ term }) => {
          terms.push(term);
          if (terms.length === 1) throw boom;
        },
        onError: (error) => {
          errors.push(error);
          throw new Error('a throwing onError changes nothing');
        },
      });
      try {
        await ctx.backdoor.waitFor('a second term', async () => terms.length === 2 && campaign.isLeader);
        expect(errors).toEqual([boom]);
        expect(terms[1]).toBeGreaterThan(terms[0]!);
        expect(campaign.term).toBe(terms[1]);
      } finally {
        await campaign.stop();
      }
    });

    it.skipIf(noPoolWait)(
      `stop() of campaigns waiting for a connection of an exhausted pool resolves at once; the connection that arrives later goes back${skipped(noPoolWait)}`,
      async () => {
        const { name, key } = ctx.name('leader-pool-wait');
        const instance = await ctx.open({ max: 1 });
        const held = await holdLock(instance, ctx.name('leader-pool-holder').name);
        let elected = 0;
        const errors: unknown[] = [];
        // A fleet of campaigns on a small pool, stopped on SIGTERM.
        const campaigns = [0, 1, 2].map(() =>
          leaderOf(instance)(name, {
            onElected: () => {
              elected++;
            },
            onError: (error) => errors.push(error),
          }),
        );
        try {
          await sleep(200);
          await settlesWithin(
            Promise.all(campaigns.map((campaign) => campaign.stop())),
            2_000,
            'stop() of campaigns waiting for a pooled connection',
          );
        } finally {
          await held.release();
        }
        expect(
          await settlesWithin(
            instance.tryWithLock(name, async () => 'after'),
            5_000,
            'withLock once the pool is free',
          ),
        ).toEqual({ acquired: true, value: 'after' });
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        expect(elected).toBe(0);
        expect(errors.map(String)).toEqual([]);
        for (const campaign of campaigns) expect(campaign.isLeader).toBe(false);
      },
    );

    it("stop() inside onElected resolves (resigning once the term's work is done); the standby is elected", async () => {
      const { name, key } = ctx.name('leader-resign');
      const [one, two] = [await ctx.open(), await ctx.open()];
      const standbyWaits = deferred();
      const resigned = deferred<{ ok: boolean; aborted: boolean }>();
      let electedB = 0;
      let selfLock: { ok: boolean; error?: unknown } | undefined;
      let a: LeaderCampaign | undefined;
      a = leaderOf(one)(name, {
        onElected: async ({ signal }) => {
          // A lock on the leader's own name would wait for the leader's session: refused at once.
          selfLock = await outcome(
            settlesWithin(
              one.withLock(name, async () => 'ran'),
              5_000,
              'withLock',
            ),
          );
          await standbyWaits.promise;
          const stopped = await outcome(settlesWithin(a!.stop(), 5_000, 'stop() inside onElected'));
          resigned.resolve({ ok: stopped.ok, aborted: signal.aborted });
        },
      });
      await ctx.backdoor.waitFor('a elected', async () => a!.isLeader);
      const b = leaderOf(two)(name, {
        onElected: () => {
          electedB++;
        },
      });
      try {
        await ctx.backdoor.waitForWaiters(key, 1);
        standbyWaits.resolve();
        expect(await settlesWithin(resigned.promise, 6_000, 'onElected after its stop()')).toEqual({
          ok: true,
          aborted: true,
        });
        await ctx.backdoor.waitFor('b elected', async () => b.isLeader, 5_000);
        expect(electedB).toBe(1);
        expect(LockUsageError.is(selfLock?.error), String(selfLock?.ok || selfLock?.error)).toBe(true);
        expect(a.isLeader).toBe(false);
        // Once resigned, stop() from outside resolves too.
        await settlesWithin(a.stop(), 2_000, 'stop() after the resignation');
      } finally {
        await b.stop();
        await settlesWithin(a.stop(), 2_000, 'stop()').catch(() => undefined);
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    // A campaign that fails backs off from retryMs, doubling up to 30 s; 5 s from the first failure
    // shows in seconds what the default 1 s does in a minute (failover 8 s after four failures).
    const BACK_OFF_MS = 5_000;
    const FAILOVER_BOUND_MS = 2_000;

    for (const [setting, value] of [
      ['statement_timeout', 300],
      ['lock_timeout', 300],
    ] as const) {
      it(`${setting} ${value} ms on the standby's connections never slows failover: its wait is not ended, nothing is reported, and it is elected at once`, async () => {
        const { name, key } = ctx.name(`leader-${setting}`);
        const log = elections();
        const errors: unknown[] = [];
        const first = await ctx.open();
        const second = await ctx.open({ url: withServerSettings(ctx.url, { [setting]: value }), max: 2 });
        const a = leaderOf(first)(name, { onElected: log.on('a') });
        await ctx.backdoor.waitFor('a elected', async () => a.isLeader);
        const b = leaderOf(second)(name, {
          retryMs: BACK_OFF_MS,
          onElected: log.on('b'),
          onError: (error) => errors.push(error),
        });
        try {
          await ctx.backdoor.waitForWaiters(key, 1);
          // Five times the setting: the wait would have been ended (and backed off) by now.
          await sleep(5 * value);
          // The leader resigns (a terminated one would campaign again, and win while the standby backs off).
          const endedAt = performance.now();
          await a.stop();
          await ctx.backdoor.waitFor('the standby elected', async () => b.isLeader, 3 * BACK_OFF_MS);
          const failoverMs = (log.terms.find((t) => t.who === 'b')?.elected ?? Number.NaN) - endedAt;
          console.info(
            `[${ctx.harness.name}] failover with ${setting} ${value} ms on the standby: ${failoverMs.toFixed(0)} ms`,
          );
          expect(errors.map(String)).toEqual([]);
          expect(failoverMs).toBeLessThan(FAILOVER_BOUND_MS);
        } finally {
          await Promise.all([a.stop(), b.stop()]);
        }
        // Every connection of the standby's pool (the one it waited on among them) has its own
        // setting back once the campaign is done with it: all are asked at once (a lone client has one).
        const connections = capabilities.concurrentCalls === false ? 1 : 2;
        const all = deferred();
        let asked = 0;
        const seen = await Promise.all(
          Array.from({ length: connections }, (_, i) =>
            second.withLock(ctx.name(`probe-${i}`).name, async (sql) => {
              const [row] = await sql(`SHOW ${setting}`);
              if (++asked === connections) all.resolve();
              await settlesWithin(all.promise, 5_000, 'every pooled connection');
              return row?.[setting];
            }),
          ),
        );
        expect(seen).toEqual(Array.from({ length: connections }, () => `${value}ms`));
      });
    }

    it("a standby's wait cancelled by someone else (pg_cancel_backend) is waited again at once: nothing reported, no back-off", async () => {
      const { name, key } = ctx.name('leader-cancelled');
      const [one, two] = [await ctx.open(), await ctx.open()];
      const errors: unknown[] = [];
      const a = leaderOf(one)(name, { onElected: () => undefined });
      await ctx.backdoor.waitFor('a elected', async () => a.isLeader);
      const b = leaderOf(two)(name, {
        retryMs: BACK_OFF_MS,
        onElected: () => undefined,
        onError: (error) => errors.push(error),
      });
      try {
        await ctx.backdoor.waitForWaiters(key, 1);
        const [waiter] = await ctx.backdoor.waitersOn(key);
        await ctx.backdoor.query('SELECT pg_cancel_backend($1::int)', [waiter]);
        await sleep(300);
        await ctx.backdoor.waitForWaiters(key, 1);
        const stoppedAt = performance.now();
        await a.stop();
        await ctx.backdoor.waitFor('the standby elected', async () => b.isLeader, 3 * BACK_OFF_MS);
        const electedMs = performance.now() - stoppedAt;
        expect(errors.map(String)).toEqual([]);
        expect(electedMs).toBeLessThan(FAILOVER_BOUND_MS);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    });

    it('a healthy leader keeps its term under idle_session_timeout 1500 ms (heartbeatMs 300, 4.5 s): never lost, one backend', async ({
      skip,
    }) => {
      if ((await serverMajor(ctx.backdoor)) < 14) skip('idle_session_timeout needs PostgreSQL 14');
      const { name, key } = ctx.name('leader-idle-timeout');
      const instance = await ctx.open({ url: withServerSettings(ctx.url, { idle_session_timeout: 1500 }) });
      const log = elections();
      const errors: unknown[] = [];
      const campaign = leaderOf(instance)(name, {
        heartbeatMs: 300,
        onElected: log.on('a'),
        onError: (error) => errors.push(error),
      });
      try {
        await ctx.backdoor.waitFor('elected', async () => campaign.isLeader);
        const [holder] = (await ctx.backdoor.locksOn(key)).filter((lock) => lock.granted);
        await sleep(4_500);
        expect(log.terms.map((t) => String(t.reason ?? 'leading'))).toEqual(['leading']);
        expect(campaign.term).toBe(log.terms[0]!.term);
        expect(errors.map(String)).toEqual([]);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: holder!.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
      } finally {
        await campaign.stop();
      }
    });

    it('bad options throw at once (typed, before any SQL); a missing table goes to onError', async () => {
      const instance = await ctx.open();
      const before = instance.statementCount();
      const start = leaderOf(instance);
      const onElected = () => undefined;
      expect(InvalidLockOptionsError.is(caught(() => start('x', {} as never)))).toBe(true);
      expect(InvalidLockOptionsError.is(caught(() => start('x', { onElected, heartbeatMs: 5 })))).toBe(true);
      expect(InvalidLockOptionsError.is(caught(() => start('x', { onElected, retryMs: -1 })))).toBe(true);
      expect(
        InvalidLockOptionsError.is(caught(() => start('x', { onElected, onError: 'log' as never }))),
      ).toBe(true);
      expect(InvalidLockKeyError.is(caught(() => start('', { onElected })))).toBe(true);
      expect(InvalidLockKeyError.is(caught(() => start(7 as never, { onElected })))).toBe(true);
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);

      const empty = await ctx.harness.open(emptyDatabaseUrl(ctx.url));
      try {
        const errors: unknown[] = [];
        let elected = false;
        const campaign = leaderOf(empty)(ctx.name('leader-missing').name, {
          retryMs: 20,
          onElected: () => {
            elected = true;
          },
          onError: (error) => errors.push(error),
        });
        await ctx.backdoor.waitFor('the error', async () => errors.length >= 2);
        await campaign.stop();
        expect(LockTableMissingError.is(errors[0])).toBe(true);
        expect(elected).toBe(false);
        expect(campaign.isLeader).toBe(false);
      } finally {
        await empty.close();
      }
    });
  });

  describe.skipIf(!ctx.viaPooler || !capabilities.session)('leader through a transaction-mode pooler', () => {
    it('the campaign reports LockUsageError to onError and ends', async () => {
      const instance = await ctx.open();
      const errors: unknown[] = [];
      const campaign = leaderOf(instance)(ctx.name('leader-pooler').name, {
        onElected: () => undefined,
        onError: (error) => errors.push(error),
      });
      await ctx.backdoor.waitFor('the error', async () => errors.length === 1);
      await campaign.stop();
      expect(LockUsageError.is(errors[0]), String(errors[0])).toBe(true);
      expect((errors[0] as Error).message).toMatch(/transaction-mode pooler/);
      expect(campaign.isLeader).toBe(false);
    });
  });
}

function isInputError(error: unknown): boolean {
  return InvalidLockOptionsError.is(error) || InvalidLockKeyError.is(error);
}
