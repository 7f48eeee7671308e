import { Cron } from 'croner';
import { parseDuration } from './duration.ts';
import { InvalidLockOptionsError } from './errors.ts';

// A runOnce job's schedule: `per` (epoch-aligned periods, cut in SQL) or `cron` in a time zone
// (periods between consecutive cron timestamps, cut here with croner from the server's now()).
// What a period is, how many were missed and which schedule a row records live here; the claim
// itself is jobs-table.ts, the run run-once.ts.

/**
 * A `runOnce` job's schedule, as its row in `pglock_jobs` records it: `per` in milliseconds, or a
 * cron expression (whitespace collapsed) with its IANA time zone as given (`'UTC'` unless given).
 *
 * @example
 * ```ts
 * import type { JobSchedule } from '@pglock/core';
 *
 * const hourly: JobSchedule = { kind: 'per', perMs: 3_600_000 };
 * const nightly: JobSchedule = { kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' };
 * ```
 */
export type JobSchedule =
  | { readonly kind: 'per'; readonly perMs: number }
  | { readonly kind: 'cron'; readonly cron: string; readonly timeZone: string };

/** A checked schedule, with the parsed cron expression for a cron one. */
export type Schedule =
  | { readonly spec: Extract<JobSchedule, { kind: 'per' }> }
  | { readonly spec: Extract<JobSchedule, { kind: 'cron' }>; readonly cron: Cron };

/** The schedule options of `runOnce` (one of `per` and `cron`; `timeZone` only with `cron`). */
export interface ScheduleInput {
  readonly per?: unknown;
  readonly cron?: unknown;
  readonly timeZone?: unknown;
}

/**
 * A cron schedule's `missed` counts the cron timestamps between the last run and this one one by
 * one (croner has no count), at some 20–100 µs each; past this many it stops and says this many.
 */
export const MISSED_COUNT_LIMIT = 1_000;

/**
 * Checks the schedule options before any SQL: exactly one of `per` and `cron`; `timeZone` only with
 * `cron`, a zone `Intl` knows; a cron expression of 5 fields (minutes) or 6 (seconds first) that
 * croner parses and that fires at some time. Each mistake is `InvalidLockOptionsError`, naming it.
 *
 * @example
 * ```ts
 * import { parseSchedule } from './job-schedule.ts';
 *
 * parseSchedule({ cron: '0 3 * * *', timeZone: 'Europe/Berlin' }, 'runOnce').spec;
 * // { kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' }
 * ```
 */
export function parseSchedule(options: ScheduleInput, verb: string): Schedule {
  const { per, cron, timeZone } = options;
  if (per !== undefined && cron !== undefined) {
    throw new InvalidLockOptionsError(
      `${verb}: give per or cron, not both: they are two schedules, and one name runs on one (got per ${String(per)} and cron ${JSON.stringify(cron)}).`,
    );
  }
  if (per === undefined && cron === undefined) {
    throw new InvalidLockOptionsError(
      `${verb}: options need a schedule: per (e.g. { per: '1h' }) or cron (e.g. { cron: '0 3 * * *', timeZone: 'Europe/Berlin' }).`,
    );
  }
  if (per !== undefined) {
    if (timeZone !== undefined) {
      throw new InvalidLockOptionsError(
        `${verb}: timeZone goes with cron; per periods are epoch-aligned in UTC (got timeZone ${JSON.stringify(timeZone)} with per ${String(per)}).`,
      );
    }
    return { spec: { kind: 'per', perMs: parseDuration(per, 'per', verb) } };
  }
  if (typeof cron !== 'string' || cron.trim() === '') {
    throw new InvalidLockOptionsError(
      `${verb}: cron must be a cron expression such as '0 3 * * *' (5 fields) or '*/10 * * * * *' (6, seconds first) (got ${describe(cron)}).`,
    );
  }
  const zone = timeZoneOf(timeZone, verb);
  const expression = cron.trim().replace(/\s+/g, ' ');
  let parsed: Cron;
  let next: Date | null;
  try {
    parsed = new Cron(expression, {
      mode: '5-or-6-parts',
      // The same instants; croner converts through Intl for a named zone, several times slower.
      ...(zone === 'UTC' ? { utcOffset: 0 } : { timezone: zone }),
    });
    // In the try: a zone Intl takes that croner cannot convert with fails here, not at the claim.
    next = parsed.nextRun();
  } catch (error) {
    throw new InvalidLockOptionsError(
      `${verb}: cron ${JSON.stringify(cron)} in ${zone} is not a schedule croner reads (${error instanceof Error ? error.message : String(error)}). ` +
        `Use 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), e.g. '0 3 * * *' or '*/10 * * * * *', and an IANA zone.`,
    );
  }
  if (next === null) {
    throw new InvalidLockOptionsError(
      `${verb}: cron ${JSON.stringify(cron)} never fires (no date matches it), so the job would never run.`,
    );
  }
  return { spec: { kind: 'cron', cron: expression, timeZone: zone }, cron: parsed };
}

/**
 * The time zone as given, once `Intl` knows it; `'UTC'` when absent. Not canonicalised: runtimes
 * disagree on the canonical name (`'Asia/Kolkata'` is `'Asia/Calcutta'` to older ICU data), and the
 * row's zone must read the same from every instance of a fleet.
 */
function timeZoneOf(value: unknown, verb: string): string {
  if (value === undefined) return 'UTC';
  if (typeof value === 'string' && value.trim() !== '') {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value.trim() });
      return value.trim();
    } catch {
      // Below: an unknown zone.
    }
  }
  throw new InvalidLockOptionsError(
    `${verb}: timeZone must be an IANA time zone this runtime's Intl knows, such as 'Europe/Berlin' or 'UTC' (got ${describe(value)}).`,
  );
}

/**
 * A cron schedule's period around `nowMs` (epoch ms, the transaction's `now()`): `start` is the
 * latest cron timestamp at or before it, `end` the next one, `before` the one before `start`
 * (`-8.64e15`, the earliest date, when the expression never fired before `start`). DST gaps and
 * repeats are croner's: a fixed-time job (one value in each of seconds, minutes and hours) runs once
 * on a repeated time and right after a gap that skips it; an interval job runs on both occurrences
 * of a repeated time and skips the times of a gap.
 *
 * @example
 * ```ts
 * import { cronPeriod, parseSchedule } from './job-schedule.ts';
 *
 * const schedule = parseSchedule({ cron: '0 3 * * *', timeZone: 'Europe/Berlin' }, 'runOnce');
 * if ('cron' in schedule) cronPeriod(schedule.cron, Date.parse('2026-01-02T12:00:00Z'));
 * // { start: 2026-01-02T02:00:00Z, end: 2026-01-03T02:00:00Z, before: 2026-01-01T02:00:00Z } (epoch ms)
 * ```
 */
export function cronPeriod(cron: Cron, nowMs: number): { start: number; end: number; before: number } {
  // previousRuns is strictly before its reference, nextRun strictly after: a timestamp at nowMs
  // itself starts the period.
  const [start, before] = cron.previousRuns(2, new Date(nowMs + 1));
  const end = cron.nextRun(new Date(nowMs));
  if (start === undefined || end === null) {
    throw new InvalidLockOptionsError(
      `runOnce: cron ${JSON.stringify(cron.getPattern())} has no timestamp ${start === undefined ? 'at or before' : 'after'} the database server's now() (${new Date(nowMs).toISOString()}), so no period holds it.`,
    );
  }
  return { start: start.getTime(), end: end.getTime(), before: before?.getTime() ?? -8.64e15 };
}

/**
 * How many periods of `schedule` lie strictly between the last committed run's period (starting at
 * `previousMs`) and the period starting at `startMs`: the periods no run took. `0` on a first run
 * (`previousMs` undefined). A cron count stops at {@link MISSED_COUNT_LIMIT}.
 *
 * @example
 * ```ts
 * import { missedPeriods, parseSchedule } from './job-schedule.ts';
 *
 * missedPeriods(parseSchedule({ per: '1h' }, 'runOnce'), 0, 5 * 3_600_000); // 4
 * ```
 */
export function missedPeriods(schedule: Schedule, previousMs: number | undefined, startMs: number): number {
  if (previousMs === undefined || previousMs >= startMs) return 0;
  if (!('cron' in schedule)) {
    const per = schedule.spec.perMs;
    // Period starts k·per with previousMs < k·per < startMs (previousMs may be another schedule's).
    return Math.max(0, Math.ceil(startMs / per) - 1 - Math.floor(previousMs / per));
  }
  let missed = 0;
  let at = new Date(previousMs);
  while (missed < MISSED_COUNT_LIMIT) {
    const next = schedule.cron.nextRun(at);
    if (next === null || next.getTime() >= startMs) break;
    missed++;
    at = next;
  }
  return missed;
}

/** The schedule a row records (`per_ms`, `cron`, `time_zone`), or `undefined` when it records none. */
export function storedSchedule(perMs: unknown, cron: unknown, timeZone: unknown): JobSchedule | undefined {
  // A row with both (an older pglock, which knows no cron, took a cron job's row over with its per)
  // reads as that per, and conflictsWith refuses it to every caller until it is reset.
  if (perMs !== null && perMs !== undefined) return { kind: 'per', perMs: Number(perMs) };
  if (typeof cron === 'string')
    return { kind: 'cron', cron, timeZone: typeof timeZone === 'string' ? timeZone : '' };
  return undefined;
}

/**
 * The schedule a row records when it refuses a call with `schedule` (another schedule, or both a
 * per and a cron); `undefined` when the call may claim.
 */
export function conflictsWith(
  schedule: JobSchedule,
  perMs: unknown,
  cron: unknown,
  timeZone: unknown,
): JobSchedule | undefined {
  const stored = storedSchedule(perMs, cron, timeZone);
  if (stored === undefined) return undefined;
  const both = stored.kind === 'per' && cron !== null && cron !== undefined;
  return both || !sameSchedule(schedule, stored) ? stored : undefined;
}

/** Whether two schedules are the same one (a cron expression compared as written, spaces collapsed). */
export function sameSchedule(a: JobSchedule, b: JobSchedule): boolean {
  if (a.kind === 'per') return b.kind === 'per' && a.perMs === b.perMs;
  return b.kind === 'cron' && a.cron === b.cron && a.timeZone === b.timeZone;
}

/** A schedule for a message: `per '1d' (86400000 ms)`, `cron '0 3 * * *' in Europe/Berlin`. */
export function describeSchedule(schedule: JobSchedule): string {
  if (schedule.kind === 'cron') return `cron '${schedule.cron}' in ${schedule.timeZone || 'no time zone'}`;
  return `per ${describePer(schedule.perMs)}`;
}

/** A `per` for a message: `86400000` → `'1d' (86400000 ms)`, `1500` → `1500 ms`. */
function describePer(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `'${ms / size}${unit}' (${ms} ms)`;
  }
  return `${ms} ms`;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
