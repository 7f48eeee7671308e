import { describe, expect, it } from 'vitest';
import { InvalidLockOptionsError } from '../src/errors.ts';
import {
  conflictsWith,
  cronPeriod,
  MISSED_COUNT_LIMIT,
  missedPeriods,
  parseSchedule,
  type Schedule,
  sameSchedule,
  storedSchedule,
} from '../src/job-schedule.ts';
import { JOBS_TABLE_DDL, JOBS_TABLE_UPGRADE_DDL } from '../src/jobs-table.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

function cronOf(cron: string, timeZone?: string): Extract<Schedule, { cron: unknown }> {
  const schedule = parseSchedule({ cron, timeZone }, 'runOnce');
  if (!('cron' in schedule)) throw new Error('not a cron schedule');
  return schedule;
}

function periodAt(schedule: Extract<Schedule, { cron: unknown }>, now: string) {
  const { start, end, before } = cronPeriod(schedule.cron, at(now));
  return { start: iso(start), end: iso(end), before: iso(before) };
}

const inputError = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return InvalidLockOptionsError.is(error) ? (error as Error).message : `not typed: ${String(error)}`;
  }
  return 'no error';
};

describe('runOnce schedules', () => {
  it('parses per or cron (5 or 6 fields, spaces collapsed), a time zone as given, UTC by default', () => {
    expect(parseSchedule({ per: '1h' }, 'runOnce').spec).toEqual({ kind: 'per', perMs: 3_600_000 });
    expect(parseSchedule({ cron: ' 0  3 * * * ' }, 'runOnce').spec).toEqual({
      kind: 'cron',
      cron: '0 3 * * *',
      timeZone: 'UTC',
    });
    // As given, not as this runtime's ICU names it (Asia/Calcutta for some): every instance agrees.
    expect(parseSchedule({ cron: '*/5 * * * * *', timeZone: 'Asia/Kolkata' }, 'runOnce').spec).toEqual({
      kind: 'cron',
      cron: '*/5 * * * * *',
      timeZone: 'Asia/Kolkata',
    });
  });

  it('bad input is InvalidLockOptionsError naming the mistake', () => {
    const parse = (options: Record<string, unknown>) => () => parseSchedule(options, 'runOnce');
    expect(inputError(parse({ per: '1h', cron: '0 * * * *' }))).toMatch(/not both/);
    expect(inputError(parse({}))).toMatch(/need a schedule/);
    expect(inputError(parse({ per: '1h', timeZone: 'UTC' }))).toMatch(/timeZone goes with cron/);
    for (const cron of ['61 * * * *', '* * *', 'every day', '0 0 1 1 * 2030', '@reboot', '', 42]) {
      expect(inputError(parse({ cron })), String(cron)).toMatch(/cron/);
    }
    expect(inputError(parse({ cron: '0 0 30 2 *' }))).toMatch(/never fires/);
    for (const timeZone of ['Mars/Olympus', '', 7]) {
      expect(inputError(parse({ cron: '0 * * * *', timeZone })), String(timeZone)).toMatch(/IANA time zone/);
    }
  });

  it('a cron period runs from the latest timestamp at or before now to the next one', () => {
    const daily = cronOf('0 3 * * *', 'Europe/Berlin');
    // Winter (CET, UTC+1): 03:00 is 02:00Z.
    expect(periodAt(daily, '2026-01-02T12:00:00.000Z')).toEqual({
      start: '2026-01-02T02:00:00.000Z',
      end: '2026-01-03T02:00:00.000Z',
      before: '2026-01-01T02:00:00.000Z',
    });
    // A timestamp at now itself starts the period.
    const seconds = cronOf('*/1 * * * * *');
    expect(periodAt(seconds, '2026-01-01T12:00:00.000Z')).toMatchObject({
      start: '2026-01-01T12:00:00.000Z',
      end: '2026-01-01T12:00:01.000Z',
    });
    expect(periodAt(seconds, '2026-01-01T12:00:00.999Z')).toMatchObject({
      start: '2026-01-01T12:00:00.000Z',
      end: '2026-01-01T12:00:01.000Z',
    });
  });

  // Europe/Berlin, 2025: the clocks went from 02:00 CET to 03:00 CEST on 30 March (02:00–03:00 does not
  // exist), and from 03:00 CEST back to 02:00 CET on 26 October (02:00–03:00 happens twice).
  it('DST gap (Europe/Berlin, 2025-03-30): a fixed-time job runs right after the gap, an interval job skips it', () => {
    const fixed = cronOf('30 2 * * *', 'Europe/Berlin');
    // 02:30 does not exist that day: the run is at 03:00 CEST (01:00Z), the first time after the gap.
    expect(periodAt(fixed, '2025-03-30T01:30:00.000Z')).toEqual({
      start: '2025-03-30T01:00:00.000Z',
      end: '2025-03-31T00:30:00.000Z',
      before: '2025-03-29T01:30:00.000Z',
    });
    // An hourly interval job: 01:00 CET (00:00Z) is followed by 03:00 CEST (01:00Z); 02:00 is skipped.
    const hourly = cronOf('0 * * * *', 'Europe/Berlin');
    expect(periodAt(hourly, '2025-03-30T00:30:00.000Z')).toEqual({
      start: '2025-03-30T00:00:00.000Z',
      end: '2025-03-30T01:00:00.000Z',
      before: '2025-03-29T23:00:00.000Z',
    });
    expect(missedPeriods(hourly, at('2025-03-29T23:00:00Z'), at('2025-03-30T02:00:00Z'))).toBe(2);
  });

  it('DST repeat (Europe/Berlin, 2025-10-26): a fixed-time job runs once, an interval job on both occurrences', () => {
    const fixed = cronOf('30 2 * * *', 'Europe/Berlin');
    // 02:30 happens at 00:30Z (CEST) and 01:30Z (CET): only the first starts a period, which lasts 25 h.
    expect(periodAt(fixed, '2025-10-26T01:45:00.000Z')).toEqual({
      start: '2025-10-26T00:30:00.000Z',
      end: '2025-10-27T01:30:00.000Z',
      before: '2025-10-25T00:30:00.000Z',
    });
    const halfHourly = cronOf('0,30 * * * *', 'Europe/Berlin');
    // 02:30 CET, the second 02:30, is a period of its own after 02:30 CEST.
    expect(periodAt(halfHourly, '2025-10-26T01:45:00.000Z')).toEqual({
      start: '2025-10-26T01:30:00.000Z',
      end: '2025-10-26T02:00:00.000Z',
      before: '2025-10-26T01:00:00.000Z',
    });
    // 00:30Z, 01:00Z and 01:30Z lie between a run at 00:00Z and one at 02:00Z.
    expect(missedPeriods(halfHourly, at('2025-10-26T00:00:00Z'), at('2025-10-26T02:00:00Z'))).toBe(3);
  });

  it('missed: the periods strictly between the last run and this one; 0 on the first run', () => {
    const hourly = parseSchedule({ per: '1h' }, 'runOnce');
    expect(missedPeriods(hourly, undefined, 5 * 3_600_000)).toBe(0);
    expect(missedPeriods(hourly, 4 * 3_600_000, 5 * 3_600_000)).toBe(0);
    expect(missedPeriods(hourly, 0, 5 * 3_600_000)).toBe(4);
    // A last run of another schedule (13:00 of an hourly job, now daily): no daily period between.
    const daily = parseSchedule({ per: '1d' }, 'runOnce');
    expect(missedPeriods(daily, 13 * 3_600_000, 86_400_000)).toBe(0);
    expect(missedPeriods(daily, 13 * 3_600_000, 3 * 86_400_000)).toBe(2);
    const seconds = cronOf('* * * * * *');
    expect(missedPeriods(seconds, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:10Z'))).toBe(9);
    expect(missedPeriods(seconds, at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:00Z'))).toBe(
      MISSED_COUNT_LIMIT,
    );
  });

  it('the schedule a row records, and whether it is the same one', () => {
    expect(storedSchedule(null, null, null)).toBeUndefined();
    expect(storedSchedule('1000', null, null)).toEqual({ kind: 'per', perMs: 1_000 });
    const berlin = { kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' } as const;
    expect(storedSchedule(null, '0 3 * * *', 'Europe/Berlin')).toEqual(berlin);
    expect(sameSchedule(berlin, { ...berlin })).toBe(true);
    expect(sameSchedule(berlin, { ...berlin, timeZone: 'UTC' })).toBe(false);
    expect(sameSchedule(berlin, { kind: 'per', perMs: 86_400_000 })).toBe(false);
    // A row an older pglock (no cron) took over with its per records both: every caller is refused.
    const hourly = { kind: 'per', perMs: 3_600_000 } as const;
    expect(conflictsWith(hourly, '3600000', null, null)).toBeUndefined();
    expect(conflictsWith(hourly, '3600000', '0 3 * * *', 'Europe/Berlin')).toEqual(hourly);
    expect(conflictsWith(berlin, '3600000', '0 3 * * *', 'Europe/Berlin')).toEqual(hourly);
    expect(conflictsWith(berlin, null, null, null)).toBeUndefined();
  });

  it('the upgrade adds every column of the DDL but the first three, each IF NOT EXISTS, in one statement', () => {
    const declared = [...JOBS_TABLE_DDL.matchAll(/^\s{2}(\w+)\s+(.+?),?\s+--/gm)].map(([, name]) => name);
    const added = [...JOBS_TABLE_UPGRADE_DDL.matchAll(/ADD COLUMN IF NOT EXISTS (\w+)/g)].map(
      ([, name]) => name,
    );
    const original = ['key', 'name', 'namespace', 'period_start', 'ran_at', 'term', 'elected_at'];
    expect(added.sort()).toEqual(declared.filter((name) => !original.includes(name as string)).sort());
    expect(JOBS_TABLE_UPGRADE_DDL.match(/;/g)).toHaveLength(1);
  });
});
