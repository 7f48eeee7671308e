import {
  InvalidLockKeyError,
  InvalidLockOptionsError,
  lockKey,
  type RunOnceOptions,
  ScheduleMismatchError,
} from '@pglock/core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Backdoor } from '../backdoor.ts';
import { Child, processTestTimeout } from '../child.ts';
import { holdLock, missing, type SuiteContext, skipped, sleep } from '../context.ts';
import type { AdapterInstance } from '../harness.ts';
import { type ScheduleCall, scheduleRowsDdl } from '../schedules-scenarios.ts';
import { setUpDatabases } from './scheduling.ts';

const HOUR = 3_600_000;

/** The server's `clock_timestamp()` in epoch ms. */
async function serverClock(backdoor: Backdoor): Promise<number> {
  const [row] = await backdoor.query<{ ms: string }>(
    'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms',
  );
  return Number(row?.ms);
}

/** The job's row, as the backdoor reads it (epoch ms for the timestamps). */
async function jobRow(backdoor: Backdoor, key: bigint) {
  const [row] = await backdoor.query<{
    per: string | null;
    cron: string | null;
    zone: string | null;
    start: string | null;
    end: string | null;
    ranat: string | null;
  }>(
    `SELECT per_ms::text AS per, cron, time_zone AS zone,
       floor(extract(epoch FROM period_start) * 1000)::bigint::text AS start,
       floor(extract(epoch FROM period_end) * 1000)::bigint::text AS end,
       floor(extract(epoch FROM ran_at) * 1000)::bigint::text AS ranat
     FROM pglock_jobs WHERE key = $1::bigint`,
    [String(key)],
  );
  return row;
}

/** Moves the job's last run back in time, as if the fleet had been down since. */
async function backdate(backdoor: Backdoor, key: bigint, set: { periodMs?: number; ranAtMs?: number }) {
  if (set.periodMs !== undefined) {
    await backdoor.query(
      `UPDATE pglock_jobs SET period_start = period_start - $2::bigint * interval '1 millisecond',
         period_end = period_end - $2::bigint * interval '1 millisecond' WHERE key = $1::bigint`,
      [String(key), String(set.periodMs)],
    );
  }
  if (set.ranAtMs !== undefined) {
    await backdoor.query(
      `UPDATE pglock_jobs SET ran_at = clock_timestamp() - $2::bigint * interval '1 millisecond' WHERE key = $1::bigint`,
      [String(key), String(set.ranAtMs)],
    );
  }
}

/** The wall-clock time of `date` in `timeZone`, as `HH:MM`. */
function localTime(date: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(date);
}

interface RunRow {
  readonly worker: number;
  readonly period_start: Date;
  readonly period_end: Date;
  readonly missed: number;
  readonly at_now: Date;
  readonly started: Date;
  readonly ended: Date;
}

/** Starts `count` scheduleLoop workers together (behind a gate the backdoor holds) and collects their reports. */
async function fleet(
  ctx: SuiteContext,
  count: number,
  args: {
    key: string;
    table: string;
    options: RunOnceOptions;
    ms: number;
    tickMs: [number, number];
    overrunMs?: number;
  },
): Promise<{ rows: RunRow[]; calls: ScheduleCall[] }> {
  await ctx.backdoor.query(scheduleRowsDdl(args.table));
  const gate = ctx.name('schedules-gate');
  await ctx.backdoor.query('SELECT pg_advisory_lock($1::bigint)', [String(gate.key)]);
  const children = Array.from(
    { length: count },
    () => new Child(ctx.harness, ctx.url, 'scheduleLoop', { ...args, gate: gate.name }),
  );
  try {
    await Promise.all(children.map((child) => child.next('ready')));
    await ctx.backdoor.waitForWaiters(gate.key, count);
  } finally {
    await ctx.backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [String(gate.key)]);
  }
  const reports = await Promise.all(children.map((child) => child.next('done', args.ms + 5_000)));
  await Promise.all(children.map((child) => child.expectSuccess()));
  const rows = await ctx.backdoor.query<RunRow & Record<string, unknown>>(
    `SELECT worker, period_start, period_end, missed, at_now, started, ended FROM ${args.table}_rows ORDER BY period_start`,
  );
  return { rows, calls: reports.flatMap((report) => report.calls as ScheduleCall[]) };
}

/**
 * Runs per period start: none twice, each call's answer true of the rows, and every period the
 * callers saw between the first and the last ran once, or found the job's lock held at every call.
 *
 * A `'busy'` answer is checked, not trusted: the lock it found held was held inside another
 * worker's call that was not busy, so the two calls overlap in time. That is what lets a period
 * go without a run deterministically (a holder of the period before stalled past its end on a
 * loaded machine) without letting a wrong `'busy'` (a lock left held) pass.
 */
function expectOneRunPerPeriod(
  rows: readonly RunRow[],
  calls: readonly ScheduleCall[],
  workers: number,
): Map<number, number> {
  const runs = new Map<number, number>();
  for (const row of rows) {
    const start = row.period_start.getTime();
    runs.set(start, (runs.get(start) ?? 0) + 1);
    // The job's now() lies in its period (the server's clock).
    expect(
      row.at_now.getTime(),
      `now() of the run of ${row.period_start.toISOString()}`,
    ).toBeGreaterThanOrEqual(start);
    expect(row.at_now.getTime()).toBeLessThan(row.period_end.getTime());
  }
  expect(
    [...runs].filter(([, count]) => count > 1).map(([start]) => new Date(start).toISOString()),
    'periods run twice',
  ).toEqual([]);
  const at = (call: ScheduleCall) => `${call.outcome} for ${new Date(call.period).toISOString()}`;
  for (const call of calls) {
    if (call.outcome === 'ran' || call.outcome === 'done') {
      expect(runs.get(call.period), `a call answered ${at(call)}, and no run has that period`).toBe(1);
    } else {
      expect(call.outcome, 'the outcomes of a schedule without minIntervalMs').toBe('busy');
      const holder = calls.find(
        (other) =>
          other.worker !== call.worker &&
          other.outcome !== 'busy' &&
          other.at <= call.until &&
          other.until >= call.at,
      );
      expect(
        holder,
        `a call answered busy at ${call.at}–${call.until} while no other call held the lock`,
      ).toBeDefined();
    }
  }
  const seen = [...new Set(calls.map((call) => call.period))].sort((a, b) => a - b);
  // The first and last period may have seen only a busy tail.
  for (const start of seen.slice(1, -1)) {
    if (calls.some((call) => call.period === start && call.outcome !== 'busy')) {
      expect(runs.get(start), new Date(start).toISOString()).toBe(1);
    }
  }
  // Every process took part: each one's calls were answered, some while another's was in flight.
  expect(new Set(calls.map((call) => call.worker)).size).toBe(workers);
  return runs;
}

/**
 * `runOnce` schedules (issue 24): cron with time zones, `minIntervalMs`, missed periods and
 * `catchUp`, overruns, and their input errors, under `schedules` (`vitest -t schedules`).
 */
export function schedulesSuite(ctx: SuiteContext): void {
  describe('schedules', () => schedulesTests(ctx));
}

function schedulesTests(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noProcesses = ctx.noProcesses;
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );

  // As the scheduling suite does (this suite may run alone): the table, upgraded, once across files.
  beforeAll(() => setUpDatabases(ctx.backdoor));

  /** `runOnce` whose job returns its `{ period, missed }`. */
  const run = (instance: AdapterInstance, name: string, options: RunOnceOptions) =>
    instance.locks.runOnce(name, options, async (_tx, context) => context);

  describe('cron', () => {
    it.skipIf(noBackdoor)(
      `in a time zone: the period runs between two cron timestamps of that zone; the row records cron and zone, per_ms NULL${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('cron-zone');
        // India has no DST: midnight there is 18:30 UTC, every day.
        const options = { cron: '0 0 * * *', timeZone: 'Asia/Kolkata' } as const;
        const first = await run(instance, name, options);
        expect(first).toMatchObject({ ran: true, missed: 0 });
        const { period } = first;
        expect([
          period.start.getUTCHours(),
          period.start.getUTCMinutes(),
          period.start.getUTCSeconds(),
        ]).toEqual([18, 30, 0]);
        expect(period.end.getTime() - period.start.getTime()).toBe(24 * HOUR);
        const now = await serverClock(ctx.backdoor);
        expect(now).toBeGreaterThanOrEqual(period.start.getTime());
        expect(now).toBeLessThan(period.end.getTime());
        expect(await jobRow(ctx.backdoor, key)).toEqual({
          per: null,
          cron: '0 0 * * *',
          zone: 'Asia/Kolkata',
          start: String(period.start.getTime()),
          end: String(period.end.getTime()),
          ranat: expect.any(String),
        });
        expect(await run(instance, name, options)).toEqual({ ran: false, reason: 'done', period });
        // The zone's wall clock, whatever its offset today (DST or not): 03:00 in Berlin.
        const berlin = await run(instance, ctx.name('cron-berlin').name, {
          cron: '0 3 * * *',
          timeZone: 'Europe/Berlin',
        });
        expect(localTime(berlin.period.start, 'Europe/Berlin')).toBe('03:00');
        expect(localTime(berlin.period.end, 'Europe/Berlin')).toBe('03:00');
        expect(berlin.period.start.getTime()).toBeLessThanOrEqual(now);
      },
    );

    it.skipIf(noContention)(
      `'busy' while another caller runs it answers the cron period${skipped(noContention)}`,
      async () => {
        const { name } = ctx.name('cron-busy');
        const [holder, caller] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(holder, lockKey(name));
        try {
          const busy = await run(caller, name, { cron: '0 */2 * * *' });
          expect(busy).toMatchObject({ ran: false, reason: 'busy' });
          expect(busy.period.start.getUTCHours() % 2).toBe(0);
          expect(busy.period.end.getTime() - busy.period.start.getTime()).toBe(2 * HOUR);
        } finally {
          await held.release();
        }
      },
    );

    it.skipIf(noBackdoor)(
      `one name is one schedule: per ↔ cron, another cron or zone is ScheduleMismatchError naming both; the message's reset moves it${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const ranNothing = async (name: string, options: RunOnceOptions) => {
          let ran = false;
          const error = await instance.locks
            .runOnce(name, options, async () => {
              ran = true;
            })
            .catch((e: unknown) => e);
          expect(ran).toBe(false);
          expect(ScheduleMismatchError.is(error), String(error)).toBe(true);
          return error as ScheduleMismatchError;
        };
        const perJob = ctx.name('mismatch-per');
        expect(await run(instance, perJob.name, { per: '1h' })).toMatchObject({ ran: true });
        const toCron = await ranNothing(perJob.name, { cron: '0 * * * *' });
        expect(toCron).toMatchObject({
          schedule: { kind: 'cron', cron: '0 * * * *', timeZone: 'UTC' },
          storedSchedule: { kind: 'per', perMs: HOUR },
          perMs: undefined,
          storedPerMs: HOUR,
        });
        expect(toCron.message).toContain("per '1h'");
        expect(toCron.message).toContain("cron '0 * * * *' in UTC");

        const cronJob = ctx.name('mismatch-cron');
        const berlin = { cron: '0 3 * * *', timeZone: 'Europe/Berlin' } as const;
        expect(await run(instance, cronJob.name, berlin)).toMatchObject({ ran: true });
        const before = await jobRow(ctx.backdoor, cronJob.key);
        expect(await ranNothing(cronJob.name, { per: '1d' })).toMatchObject({
          schedule: { kind: 'per', perMs: 24 * HOUR },
          storedSchedule: { kind: 'cron', ...berlin },
          storedPerMs: undefined,
        });
        expect(await ranNothing(cronJob.name, { cron: '0 3 * * *', timeZone: 'Europe/Paris' })).toMatchObject(
          {
            storedSchedule: { timeZone: 'Europe/Berlin' },
            schedule: { timeZone: 'Europe/Paris' },
          },
        );
        const other = await ranNothing(cronJob.name, { cron: '0 4 * * *', timeZone: 'Europe/Berlin' });
        expect(other.message).toContain("cron '0 3 * * *' in Europe/Berlin");
        expect(other.message).toContain("cron '0 4 * * *' in Europe/Berlin");
        expect(await jobRow(ctx.backdoor, cronJob.key)).toEqual(before);
        // The same expression with other spaces is the same schedule.
        expect(
          await run(instance, cronJob.name, { cron: ' 0  3 * * * ', timeZone: 'Europe/Berlin' }),
        ).toMatchObject({
          ran: false,
          reason: 'done',
        });
        expect(await instance.isLocked(cronJob.name)).toBe(false);
        // The documented reset (from the message) lets the new schedule record itself.
        const reset = /UPDATE pglock_jobs SET [^;]+;/.exec(other.message)?.[0];
        expect(reset).toBeDefined();
        await ctx.backdoor.query(reset as string);
        expect(await run(instance, cronJob.name, { per: '1d' })).toMatchObject({ ran: true });
        expect(await jobRow(ctx.backdoor, cronJob.key)).toMatchObject({
          per: String(24 * HOUR),
          cron: null,
          zone: null,
        });
      },
    );
  });

  describe('missed periods and catchUp', () => {
    it.skipIf(noBackdoor)(
      `missed: the periods no run took since the last one (0 on the first run), per and cron; after a real gap too${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        // Downtime, written into the row: the last run five hours (per) or four days (cron) ago.
        const hourly = ctx.name('missed-per');
        const first = await run(instance, hourly.name, { per: '1h' });
        expect(first).toMatchObject({ ran: true, missed: 0, value: { missed: 0 } });
        await backdate(ctx.backdoor, hourly.key, { periodMs: 5 * HOUR });
        const after = await run(instance, hourly.name, { per: '1h' });
        expect(after).toMatchObject({ ran: true, missed: 4, value: { missed: 4, period: first.period } });

        const daily = ctx.name('missed-cron');
        // Zones without DST, so that four days back is a cron timestamp whatever today is.
        const options = { cron: '30 4 * * *', timeZone: 'Asia/Tokyo' } as const;
        const day = await run(instance, daily.name, options);
        expect(day).toMatchObject({ ran: true, missed: 0 });
        await backdate(ctx.backdoor, daily.key, { periodMs: 4 * 24 * HOUR });
        expect(await run(instance, daily.name, options)).toMatchObject({
          ran: true,
          missed: 3,
          period: day.period,
        });

        // A real gap on a seconds schedule: no call for three boundaries.
        const seconds = ctx.name('missed-seconds');
        const tick = await run(instance, seconds.name, { cron: '* * * * * *' });
        expect(tick).toMatchObject({ ran: true, missed: 0 });
        const end = tick.period.end.getTime();
        await ctx.backdoor.waitFor(
          'three seconds later',
          async () => (await serverClock(ctx.backdoor)) > end + 2_100,
        );
        const later = await run(instance, seconds.name, { cron: '* * * * * *' });
        expect(later.ran).toBe(true);
        const skippedPeriods = (later.period.start.getTime() - tick.period.start.getTime()) / 1_000 - 1;
        expect(skippedPeriods).toBeGreaterThanOrEqual(2);
        expect(later.ran && later.missed).toBe(skippedPeriods);
      },
    );

    it.skipIf(noBackdoor)(
      `catchUp 'last': after missed periods this call runs the latest missed one (the row records it), the next call the current one${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('catch-up');
        const options = { per: '1h', catchUp: 'last' } as const;
        // Nothing missed on a first run: the current period.
        const first = await run(instance, name, options);
        expect(first).toMatchObject({ ran: true, missed: 0 });
        const current = first.period;
        await backdate(ctx.backdoor, key, { periodMs: 5 * HOUR });
        const caught = await run(instance, name, options);
        const last = { start: new Date(current.start.getTime() - HOUR), end: current.start };
        // Missed: the four periods before the current one; the latest runs, three stay skipped.
        expect(caught).toMatchObject({
          ran: true,
          missed: 3,
          period: last,
          value: { period: last, missed: 3 },
        });
        expect(await jobRow(ctx.backdoor, key)).toMatchObject({
          start: String(last.start.getTime()),
          end: String(last.end.getTime()),
        });
        expect(await run(instance, name, options)).toMatchObject({ ran: true, missed: 0, period: current });
        expect(await run(instance, name, options)).toMatchObject({
          ran: false,
          reason: 'done',
          period: current,
        });

        // A cron schedule catches up its latest missed timestamp, in its zone.
        const cron = ctx.name('catch-up-cron');
        const kolkata = { cron: '0 3 * * *', timeZone: 'Asia/Kolkata', catchUp: 'last' } as const;
        const today = await run(instance, cron.name, kolkata);
        await backdate(ctx.backdoor, cron.key, { periodMs: 4 * 24 * HOUR });
        const yesterday = await run(instance, cron.name, kolkata);
        expect(yesterday).toMatchObject({ ran: true, missed: 2 });
        expect(yesterday.period.end).toEqual(today.period.start);
        expect(localTime(yesterday.period.start, 'Asia/Kolkata')).toBe('03:00');
        // catchUp 'none' (the default) runs the current period, and says how many it skipped.
        await backdate(ctx.backdoor, cron.key, { periodMs: 3 * 24 * HOUR });
        expect(await run(instance, cron.name, { cron: '0 3 * * *', timeZone: 'Asia/Kolkata' })).toMatchObject(
          {
            ran: true,
            missed: 3,
            period: today.period,
          },
        );
      },
    );
  });

  describe('minIntervalMs', () => {
    it.skipIf(noBackdoor)(
      `a run starts no sooner than minIntervalMs after the last one took the lock (ran_at): 'too-soon' within the period and across periods${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('min-interval');
        // The previous period ran; the current one is due.
        const first = await run(instance, name, { per: '1h', minIntervalMs: 30 * 60_000 });
        expect(first).toMatchObject({ ran: true });
        const due = async (ranAgoMs: number) => {
          await ctx.backdoor.query(
            `UPDATE pglock_jobs SET period_start = period_start - interval '1 hour', period_end = period_end - interval '1 hour' WHERE key = $1::bigint`,
            [String(key)],
          );
          await backdate(ctx.backdoor, key, { ranAtMs: ranAgoMs });
        };
        // Within the period: the last run took the lock 10 minutes ago, the minimum is 30.
        await due(10 * 60_000);
        const before = await jobRow(ctx.backdoor, key);
        let ran = false;
        const tooSoon = await instance.locks.runOnce(
          name,
          { per: '1h', minIntervalMs: 30 * 60_000 },
          async () => {
            ran = true;
          },
        );
        expect(tooSoon).toEqual({ ran: false, reason: 'too-soon', period: first.period });
        expect(ran).toBe(false);
        expect(await jobRow(ctx.backdoor, key)).toEqual(before);
        await backdate(ctx.backdoor, key, { ranAtMs: 31 * 60_000 });
        expect(await run(instance, name, { per: '1h', minIntervalMs: 30 * 60_000 })).toMatchObject({
          ran: true,
          period: first.period,
        });
        // Across periods: a minimum of 90 minutes leaves a period out after an 80-minute-old run.
        await due(80 * 60_000);
        expect(await run(instance, name, { per: '1h', minIntervalMs: 90 * 60_000 })).toMatchObject({
          ran: false,
          reason: 'too-soon',
        });
        await backdate(ctx.backdoor, key, { ranAtMs: 91 * 60_000 });
        expect(await run(instance, name, { per: '1h', minIntervalMs: 90 * 60_000 })).toMatchObject({
          ran: true,
        });
        const [{ gap } = { gap: 0 }] = await ctx.backdoor.query<{ gap: number }>(
          `SELECT extract(epoch FROM clock_timestamp() - ran_at) * 1000 AS gap FROM pglock_jobs WHERE key = $1::bigint`,
          [String(key)],
        );
        expect(Number(gap)).toBeLessThan(60_000);
      },
    );

    it.skipIf(noBackdoor)(
      `on the server's clock, in real time: per 500 ms with minIntervalMs 1200, runs start ≥ 1200 ms apart, the periods between are missed${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('min-interval-live');
        const starts: number[] = [];
        const runs: { start: number; missed: number }[] = [];
        let tooSoon = 0;
        const until = Date.now() + 4_000;
        while (Date.now() < until) {
          const result = await instance.locks.runOnce(
            name,
            { per: 500, minIntervalMs: 1_200 },
            async (tx, { period, missed }) => {
              const [row] = await instance.sqlOn(tx)(
                'SELECT floor(extract(epoch FROM ran_at) * 1000)::bigint::text AS ms FROM pglock_jobs WHERE key = $1::bigint',
                [String(key)],
              );
              starts.push(Number(row?.ms));
              runs.push({ start: period.start.getTime(), missed });
            },
          );
          if (!result.ran && result.reason === 'too-soon') tooSoon++;
          await sleep(50);
        }
        expect(starts.length).toBeGreaterThanOrEqual(2);
        const gaps = starts.slice(1).map((start, i) => start - (starts[i] as number));
        expect(gaps.filter((gap) => gap < 1_200)).toEqual([]);
        expect(tooSoon).toBeGreaterThan(0);
        // 1200 ms is more than two periods of 500: every later run skipped one at least, and says how many.
        runs.slice(1).forEach(({ start, missed }, i) => {
          expect(missed).toBe((start - (runs[i] as { start: number }).start) / 500 - 1);
          expect(missed).toBeGreaterThanOrEqual(1);
        });
      },
    );
  });

  it.skipIf(noBackdoor)(
    `bad input: InvalidLockOptionsError before any SQL (no row, no lock)${skipped(noBackdoor)}`,
    async () => {
      const instance = await ctx.open();
      const { name, key } = ctx.name('schedules-input');
      const before = instance.statementCount();
      const job = async () => 'ran';
      const bad: unknown[] = [
        { per: '1h', cron: '0 * * * *' },
        {},
        { timeZone: 'UTC' },
        { per: '1h', timeZone: 'UTC' },
        { cron: '61 * * * *' },
        { cron: '* * *' },
        { cron: 'every day' },
        { cron: '0 0 1 1 * 2030' },
        { cron: '@reboot' },
        { cron: '0 0 30 2 *' },
        { cron: '' },
        { cron: 42 },
        { cron: '0 3 * * *', timeZone: 'Mars/Olympus' },
        { cron: '0 3 * * *', timeZone: '' },
        { cron: '0 3 * * *', timeZone: 1 },
        { per: '1h', minIntervalMs: -1 },
        { per: '1h', minIntervalMs: 1.5 },
        { per: '1h', minIntervalMs: '1h' },
        { per: '1h', catchUp: 'all' },
        { per: '1h', catchUp: true },
        { per: '1h', lockAtLeastFor: 1_000 },
        { cron: '0 3 * * *', timezone: 'UTC' },
      ];
      for (const options of bad) {
        const error = await instance.locks.runOnce(name, options as never, job).catch((e: unknown) => e);
        expect(InvalidLockOptionsError.is(error), `${JSON.stringify(options)}: ${String(error)}`).toBe(true);
      }
      const suggestions = await Promise.all(
        [
          { per: '1h', lockAtLeastFor: 1 },
          { cron: '0 3 * * *', timezone: 'UTC' },
        ].map((options) =>
          instance.locks.runOnce(name, options as never, job).catch((e: unknown) => (e as Error).message),
        ),
      );
      expect(suggestions[0]).toContain('minIntervalMs');
      expect(suggestions[1]).toContain('timeZone');
      const noName = await instance.locks
        .runOnce(42 as never, { cron: '0 3 * * *' }, job)
        .catch((e: unknown) => e);
      expect(InvalidLockKeyError.is(noName)).toBe(true);
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
      expect(
        await ctx.backdoor.query('SELECT 1 FROM pglock_jobs WHERE key = $1::bigint', [String(key)]),
      ).toEqual([]);
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    },
  );

  describe.skipIf(noProcesses)(
    `schedules across processes${noProcesses ? ` (skipped: ${noProcesses})` : ''}`,
    { timeout: processTestTimeout },
    () => {
      it('one run per cron timestamp: 3 processes ticking every 100–150 ms on */1 * * * * * for 5 s', async () => {
        const { name } = ctx.name('cron-processes');
        const { rows, calls } = await fleet(ctx, 3, {
          key: name,
          table: ctx.table(),
          options: { cron: '*/1 * * * * *' },
          ms: 5_000,
          tickMs: [100, 150],
        });
        const runs = expectOneRunPerPeriod(rows, calls, 3);
        for (const row of rows) {
          expect(row.period_start.getTime() % 1_000).toBe(0);
          expect(row.period_end.getTime() - row.period_start.getTime()).toBe(1_000);
        }
        // Five seconds hold four whole periods; a stalled holder may cost one.
        expect(runs.size).toBeGreaterThanOrEqual(3);
        expect(calls.filter((call) => call.outcome === 'ran')).toHaveLength(rows.length);
        expect(
          calls.filter((call) => call.outcome === 'done').length,
          'calls that found their period run',
        ).toBeGreaterThan(0);
      });

      it("an overrun: a run of P still running 1 s into P+1 makes P+1's ticks 'busy'; the first tick after it ends runs P+1", async () => {
        // Periods of 3 s: P+1 has 2 s after the overrun for a tick to run it, on a loaded machine too.
        const per = 3_000;
        const { name } = ctx.name('overrun-processes');
        const { rows, calls } = await fleet(ctx, 3, {
          key: name,
          table: ctx.table(),
          options: { per },
          ms: 6_500,
          tickMs: [150, 250],
          overrunMs: 1_000,
        });
        expectOneRunPerPeriod(rows, calls, 3);
        const [overran, next] = rows as [RunRow, RunRow];
        // The first run lasted past its period's end by the overrun.
        expect(overran.ended.getTime()).toBeGreaterThanOrEqual(overran.period_end.getTime() + 1_000);
        // The next period ran, after the overrun ended and inside its own period.
        expect(next.period_start).toEqual(overran.period_end);
        expect(next.missed).toBe(0);
        expect(next.started.getTime()).toBeGreaterThanOrEqual(overran.ended.getTime());
        expect(next.started.getTime()).toBeLessThan(next.period_end.getTime());
        // Ticks in P+1 while P ran answered 'busy' for P+1.
        const start = next.period_start.getTime();
        expect(
          calls.filter((call) => call.period === start && call.outcome === 'busy').length,
        ).toBeGreaterThan(0);
      });
    },
  );
}
