import { AdvisoryLockError, type AdvisoryLockErrorOptions, isCode } from './errors.ts';
import type { JobSchedule } from './job-schedule.ts';

// The errors of runOnce's jobs table: a table missing or without pglock's columns, and a schedule
// that does not match the one the job's row was made with.

/**
 * The table behind `runOnce` and `leader` (`pglock_jobs`) does not exist, or lacks a column this
 * version needs (it was created by an older pglock). `ddl` is the statement that fixes it: the
 * `CREATE TABLE` for a missing table, the `ALTER TABLE … ADD COLUMN` for a missing column. `pglock
 * schema` prints both, and the docs give them as a Prisma, Drizzle and Kysely migration.
 *
 * @example
 * ```ts
 * import { LockTableMissingError } from '@pglock/core';
 *
 * await locks.runOnce('nightly', { per: '1d' }, run).catch((error) => {
 *   if (LockTableMissingError.is(error)) console.error(error.column ?? 'no table', error.ddl);
 *   throw error;
 * });
 * ```
 */
export class LockTableMissingError extends AdvisoryLockError {
  /** The statement that creates the missing table, or adds the missing column. */
  readonly ddl: string;
  /**
   * The missing column the server named when the table exists without it (`'per_ms'`, `'cron'`…);
   * `undefined` when the table is missing.
   */
  readonly column: string | undefined;

  constructor(
    message: string,
    options: AdvisoryLockErrorOptions & { readonly ddl: string; readonly column?: string | undefined },
  ) {
    super('LOCK_TABLE_MISSING', message, options);
    this.ddl = options.ddl;
    this.column = options.column;
  }

  static override is(value: unknown): value is LockTableMissingError {
    return isCode(value, 'LOCK_TABLE_MISSING');
  }
}

/**
 * A `runOnce` call's schedule (`per`, or `cron` with its `timeZone`) differs from the one its job's
 * row records: one name is one schedule, because the row says which period ran last, and a period
 * of another schedule would read it wrong (after a `per: 1000` run, a `per: '1d'` caller would answer
 * `'done'` for a day it never ran). Nothing ran and nothing was written. Give the new schedule a new
 * name, or reset the row (the message has the SQL; docs/scheduling.md, "Changing a schedule").
 *
 * @example
 * ```ts
 * import { ScheduleMismatchError } from '@pglock/core';
 *
 * await locks.runOnce('digest', { cron: '0 3 * * *', timeZone: 'Europe/Berlin' }, send).catch((error) => {
 *   if (ScheduleMismatchError.is(error)) console.error('recorded', error.storedSchedule, 'asked', error.schedule);
 *   throw error;
 * });
 * ```
 */
export class ScheduleMismatchError extends AdvisoryLockError {
  /** The call's schedule. */
  readonly schedule: JobSchedule;
  /** The schedule the job's row records (the one its earlier runs used). */
  readonly storedSchedule: JobSchedule;
  /** The call's `per`, in milliseconds; `undefined` when the call asks for a cron schedule. */
  readonly perMs: number | undefined;
  /** The `per` the job's row records, in milliseconds; `undefined` when it records a cron schedule. */
  readonly storedPerMs: number | undefined;

  constructor(
    message: string,
    options: AdvisoryLockErrorOptions & {
      readonly schedule: JobSchedule;
      readonly storedSchedule: JobSchedule;
    },
  ) {
    super('SCHEDULE_MISMATCH', message, options);
    this.schedule = options.schedule;
    this.storedSchedule = options.storedSchedule;
    this.perMs = options.schedule.kind === 'per' ? options.schedule.perMs : undefined;
    this.storedPerMs = options.storedSchedule.kind === 'per' ? options.storedSchedule.perMs : undefined;
  }

  static override is(value: unknown): value is ScheduleMismatchError {
    return isCode(value, 'SCHEDULE_MISMATCH');
  }
}

/**
 * A `runOnce` job ran longer than its `maxRunMs`. Its `signal` aborted with this error as `reason`,
 * the statement it had in flight was cancelled, its transaction was rolled back (nothing it wrote was
 * saved, also when it ignored the signal), the run was recorded as `'timed-out'` and the lock was
 * released: the period is free again, and a later call in it runs the job (as a retry, when `retry` is
 * set). Make the job honour `signal` (pass it on, or check `signal.aborted` between steps), or raise
 * `maxRunMs`.
 *
 * @example
 * ```ts
 * import { JobTimedOutError } from '@pglock/core';
 *
 * await locks.runOnce('digest', { per: '1h', maxRunMs: 60_000 }, send).catch((error) => {
 *   if (JobTimedOutError.is(error)) console.warn(`attempt ${error.attempt} ran over ${error.maxRunMs} ms`);
 *   else throw error;
 * });
 * ```
 */
export class JobTimedOutError extends AdvisoryLockError {
  /** The call's `maxRunMs`. */
  readonly maxRunMs: number;
  /** The attempt that ran over (1 for the period's first). */
  readonly attempt: number;

  constructor(
    message: string,
    options: AdvisoryLockErrorOptions & { readonly maxRunMs: number; readonly attempt: number },
  ) {
    super('JOB_TIMED_OUT', message, options);
    this.maxRunMs = options.maxRunMs;
    this.attempt = options.attempt;
  }

  static override is(value: unknown): value is JobTimedOutError {
    return isCode(value, 'JOB_TIMED_OUT');
  }
}
