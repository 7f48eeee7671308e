import type { DurationString } from './duration.ts';
import { InvalidLockKeyError, InvalidLockOptionsError } from './errors.ts';
import { ScheduleMismatchError } from './job-errors.ts';
import { checkRunLimits, JobRun, type RetryPolicy, runBudgetMs } from './job-run.ts';
import {
  conflictsWith,
  cronPeriod,
  describeSchedule,
  type JobSchedule,
  missedPeriods,
  parseSchedule,
  type Schedule,
} from './job-schedule.ts';
import {
  type ClaimRequest,
  claimStatement,
  JOBS_TABLE,
  jobsTableError,
  nowStatement,
  periodStatement,
} from './jobs-table.ts';
import { type BigintLockKey, formatLockKey, lockKey } from './lock-key.ts';
import { checkDuration } from './lock-options.ts';
import type { PortConnection, Row } from './lock-port.ts';
import { queryFailed } from './messages.ts';
import { contextOfTransaction } from './nesting.ts';
import { checkOptionKeys, RUN_ONCE_OPTION_KEYS } from './option-keys.ts';
import { cell } from './row-cell.ts';
import { asAwaitingNested } from './savepoint-watch.ts';
import { sqlStateOf } from './sql-state.ts';
import {
  nestingConnection,
  runLocked,
  type TryResult,
  type VerbScope,
  type WithLockOptions,
} from './transaction-lock.ts';
import type { TransactionSettings } from './transaction-settings.ts';

/**
 * One period of a `runOnce` job: `[start, end)` on the database server's clock. With `per`,
 * epoch-aligned in UTC; with `cron`, from the latest cron timestamp at or before the server's `now()`
 * to the next one. It is the period of the job's transaction's `now()`, so `now()` (and
 * `DEFAULT now()`) in the job always falls inside it, except for a run that catches up a missed period
 * (`catchUp: 'last'`), whose period is that earlier one.
 */
export interface RunOncePeriod {
  readonly start: Date;
  readonly end: Date;
}

/** A `per` schedule (see {@link RunOnceOptions}). */
export interface RunOncePer {
  /**
   * The period: milliseconds, or `'30s'`, `'15m'`, `'1h'`, `'1d'` (a whole number and one unit of
   * ms, s, m, h, d; at most 2^31-1 ms, about 24.8 days). Periods are cut from the database server's
   * clock (`now()` of the job's transaction), epoch-aligned in UTC: `'1d'` starts at 00:00 UTC, `'7d'`
   * on Thursdays (1970-01-01 was one). One name is one schedule: the job's row records `per`, and a
   * call with another schedule rejects with `ScheduleMismatchError`.
   */
  readonly per: number | DurationString;
  readonly cron?: undefined;
  readonly timeZone?: undefined;
}

/** A `cron` schedule (see {@link RunOnceOptions}). */
export interface RunOnceCron {
  /**
   * A cron expression: 5 fields (`'0 3 * * *'`: minute hour day-of-month month day-of-week) or 6,
   * seconds first (`'*⁠/10 * * * * *'`), as croner reads them (ranges, steps, names, `L`, `W`, `#`,
   * `@daily`). Each cron timestamp starts a period that lasts until the next one, and runs at most
   * once across the fleet. The job's row records the expression and the zone, and a call with another
   * schedule rejects with `ScheduleMismatchError`.
   */
  readonly cron: string;
  /**
   * The IANA time zone the expression is read in (`'Europe/Berlin'`), default `'UTC'`. DST gaps and
   * repeats are croner's: a fixed-time job (`'30 2 * * *'`) runs once on a repeated 02:30, and at
   * 03:00 on the day a gap skips it; an interval job (`'*⁠/30 * * * *'`) runs on both occurrences of a
   * repeated time and skips the times of a gap.
   */
  readonly timeZone?: string | undefined;
  readonly per?: undefined;
}

/** The options of `runOnce` beside its schedule (see {@link RunOnceOptions}). */
export interface RunOnceRunOptions<S extends TransactionSettings = TransactionSettings> {
  /**
   * `0` or absent: try once, and resolve `{ ran: false, reason: 'busy' }` while another caller runs
   * the job. Positive: wait at most this long for it; a wait that ends with the other run committed
   * resolves `'done'`.
   */
  readonly timeoutMs?: number | undefined;
  /** Aborts a wait (`LockAbortedError`); see `timeoutMs`. */
  readonly signal?: AbortSignal | undefined;
  /** Mixed into the hash of the name, as for every lock. */
  readonly namespace?: string | undefined;
  /** How the job's transaction is opened (refused when the call nests in a running transaction). */
  readonly transaction?: S | undefined;
  /**
   * ShedLock's `lockAtLeastFor`: a run starts no sooner than this many ms after the last committed
   * run started (its `ran_at`, on the server's clock), also when that run was for another period; a
   * call refused for that resolves `{ ran: false, reason: 'too-soon' }`. `0` or absent: no minimum.
   */
  readonly minIntervalMs?: number | undefined;
  /**
   * What runs after periods were missed (no run committed in them: downtime, an overrun, a
   * `minIntervalMs`). `'none'` (default): the current period, with `missed` saying how many were
   * skipped. `'last'`: the latest missed period first (the run's `period` is that one, the row
   * records it); the current period runs on the next call.
   */
  readonly catchUp?: 'none' | 'last' | undefined;
  /**
   * The longest the job may run, in ms (1 to 2^31-1). Past it, the job's `signal` aborts with
   * `JobTimedOutError`, the statement it has in flight is cancelled, its transaction is rolled back
   * (nothing it wrote is saved, also when it ignores the signal), the run is recorded as
   * `'timed-out'` and the lock released: the period is free again, and the call rejects with that
   * `JobTimedOutError` at once, without waiting for the job. Until the job settles, its connection
   * stays out of the pool in a failed transaction that holds no lock, so every statement it still
   * sends fails. Refused when the call nests in a running transaction.
   */
  readonly maxRunMs?: number | undefined;
  /**
   * Runs a job that throws again, in this call and this period: up to `limit` more attempts,
   * `delayMs` apart (holding the lock meanwhile; the call's `signal` ends the wait), while the
   * period lasts. The attempts are recorded per period, so once a period has had `limit + 1`, every
   * later call in it (any process) resolves `{ ran: false, reason: 'failed', attempts }`. A run that
   * went over `maxRunMs` counts as an attempt, and is not retried in the same call. Without `retry`,
   * each later call in the period runs a failed job again. Refused when the call nests.
   */
  readonly retry?: RetryPolicy | undefined;
}

/**
 * Options of `runOnce`: a schedule (`per`, or `cron` with an optional `timeZone`; exactly one), and
 * how it runs.
 *
 * @example
 * ```ts
 * import type { RunOnceOptions } from '@pglock/core';
 *
 * const hourly: RunOnceOptions = { per: '1h' };
 * const patient: RunOnceOptions = { per: 30_000, timeoutMs: 5_000, namespace: 'billing' };
 * const nightly: RunOnceOptions = { cron: '0 3 * * *', timeZone: 'Europe/Berlin', catchUp: 'last' };
 * const spaced: RunOnceOptions = { cron: '* * * * *', minIntervalMs: 5 * 60_000 };
 * // At most a minute per run, and two more attempts in the period when it throws.
 * const bounded: RunOnceOptions = { per: '1h', maxRunMs: 60_000, retry: { limit: 2, delayMs: 5_000 } };
 * ```
 */
export type RunOnceOptions<S extends TransactionSettings = TransactionSettings> = RunOnceRunOptions<S> &
  (RunOncePer | RunOnceCron);

/** What the job gets besides the transaction. */
export interface RunOnceContext {
  /** The period it runs for. */
  readonly period: RunOncePeriod;
  /**
   * How many periods of its schedule lie between the last committed run's period and this one (no
   * run took them); `0` on the first run. A cron count stops at 1000.
   */
  readonly missed: number;
  /**
   * Aborts when the run went over `maxRunMs` (`reason`: `JobTimedOutError`) or the call's own
   * `signal` fired (its reason). Pass it on to what the job awaits (`fetch(url, { signal })`).
   */
  readonly signal: AbortSignal;
  /** 1 for the period's first run, 2 for its first retry, and so on (counted across processes). */
  readonly attempt: number;
}

/** Why a `runOnce` call did not run its job (see {@link RunOnceResult}). */
export type RunOnceReason = 'done' | 'busy' | 'too-soon' | 'failed';

/** `R` when options of type `O` may carry the key `K` (set to something other than `undefined`). */
type IfOption<O, K extends string, R> = K extends keyof O
  ? O[keyof O & K] extends undefined
    ? never
    : R
  : never;

/**
 * The reasons a call with options of type `O` can answer: `'too-soon'` only when `O` may carry a
 * `minIntervalMs`, `'failed'` only when it may carry a `retry`, so code written before them (an
 * exhaustive `switch` over `'done' | 'busy'`) still compiles.
 */
export type RunOnceReasonOf<O> =
  | 'done'
  | 'busy'
  | IfOption<O, 'minIntervalMs', 'too-soon'>
  | IfOption<O, 'retry', 'failed'>;

/**
 * What `runOnce` resolves: `ran: true` with the job's value when this call ran it, else why not:
 * `'done'` (a run of this period committed already), `'busy'` (another caller is running it now),
 * `'too-soon'` (`minIntervalMs` has not passed since the last run started) or, with `retry`,
 * `'failed'` (the period has had its `limit + 1` attempts; `attempts` says how many). Only a call
 * given `minIntervalMs` (or `retry`) is typed with `'too-soon'` (or `'failed'`).
 */
export type RunOnceResult<T, R extends RunOnceReason = RunOnceReason> =
  | { readonly ran: true; readonly value: T; readonly period: RunOncePeriod; readonly missed: number }
  | { readonly ran: false; readonly reason: Exclude<R, 'failed'>; readonly period: RunOncePeriod }
  | ('failed' extends R
      ? {
          readonly ran: false;
          readonly reason: 'failed';
          readonly period: RunOncePeriod;
          readonly attempts: number;
        }
      : never);

/** The name's key, with the name and namespace kept on it (they name the job's row). */
export function jobKey(name: unknown, namespace: string | undefined, verb: string): BigintLockKey {
  if (typeof name !== 'string') {
    throw new InvalidLockKeyError(
      `${verb}: the name must be a string (got ${typeof name}); it names the lock and the row of ${verb} in pglock_jobs.`,
      name,
    );
  }
  return lockKey(name, { namespace }) as BigintLockKey;
}

// Private: thrown from the transaction body when the claim found another caller's run in its way.
class Busy {
  constructor(readonly cause: unknown) {}
}

// Under repeatable read or serializable, a run that committed after this transaction's snapshot was
// taken (before the lock was granted) makes the claim fail to serialize: another caller was running it.
const SERIALIZATION_FAILURE = '40001';

/**
 * `runOnce`: in a transaction whose first statement tries the name's lock, claims the current
 * period in `pglock_jobs` and runs `fn`, so the job's writes and its "done for this period" record
 * commit or roll back together. Nested in a running callback (or given a transaction), it runs in a
 * savepoint there, and the record commits with that transaction.
 */
export function runOnce<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  name: unknown,
  options: RunOnceOptions | undefined,
  fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  verb = 'runOnce',
): Promise<RunOnceResult<T>> {
  // Nested in a callback, the nested lock starts before runJob's first await: the caller waiting on
  // runJob's promise is waiting for that call (savepoint-watch.ts).
  return asAwaitingNested(runJob(scope, name, options, fn, verb));
}

async function runJob<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  name: unknown,
  options: RunOnceOptions | undefined,
  fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  verb = 'runOnce',
): Promise<RunOnceResult<T>> {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionsError(
      `${verb}: options must be an object with a schedule, e.g. { per: '1h' } or { cron: '0 3 * * *' }.`,
    );
  }
  checkOptionKeys(options, RUN_ONCE_OPTION_KEYS, verb);
  if (typeof fn !== 'function') throw new InvalidLockOptionsError(`${verb}: the job must be a function.`);
  const schedule = parseSchedule(options, verb);
  const claimLimits = runLimitsOf(options, verb);
  const key = jobKey(name, options.namespace ?? scope.defaults.namespace, verb);
  const nested = nestingConnection(scope) !== undefined;
  const limits = checkRunLimits(options, verb, nested);
  const lockOptions: WithLockOptions = {
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    transaction: withRunBudget(scope, options, runBudgetMs(limits), verb),
    shared: false,
  };
  const job = new JobRun(scope, key, limits, options.signal, verb, nested);
  let missed = 0;
  let outcome: TryResult<RunOnceResult<T>>;
  try {
    const locked = runLocked(
      scope,
      key,
      async (tx: Tx): Promise<RunOnceResult<T>> => {
        const connection = contextOfTransaction(tx)?.connection;
        if (connection === undefined) throw new Error('pglock bug: runOnce ran outside its lock context');
        const claim = await claimPeriod(connection, key, schedule, claimLimits, verb, () =>
          job.beforeClaim(connection),
        );
        if (!claim.claimed) return { ran: false, reason: claim.reason, period: claim.period };
        const { period } = claim;
        missed = claim.missed;
        const run = await job.run(
          connection,
          tx,
          period,
          (t: Tx, context) => fn(t, { ...context, missed }),
          claim.row,
        );
        return run.ran ? { ran: true, value: run.value, period, missed } : { ...run, period };
      },
      lockOptions,
      true,
      verb,
    ) as Promise<typeof outcome>;
    // A run past maxRunMs answers once its lock is released, before its job (and transaction) end.
    outcome = await (limits.maxRunMs === undefined ? locked : Promise.race([locked, job.timedOut]));
  } catch (error) {
    // pglock committed the run itself, and the ORM refused to commit the empty transaction after.
    if (job.committed !== undefined && !(error instanceof Busy))
      return { ran: true, value: job.committed.value as T, period: job.period as RunOncePeriod, missed };
    if (!(error instanceof Busy)) throw error;
    outcome = { acquired: false };
  }
  if (outcome.acquired) return outcome.value;
  return { ran: false, reason: 'busy', period: await currentPeriod(scope, key, schedule, verb) };
}

/** `minIntervalMs` and `catchUp`, checked before any SQL. */
function runLimitsOf(options: RunOnceOptions, verb: string): Pick<ClaimRequest, 'minIntervalMs' | 'catchUp'> {
  const { minIntervalMs = 0, catchUp = 'none' } = options;
  if (catchUp !== 'none' && catchUp !== 'last') {
    throw new InvalidLockOptionsError(
      `${verb}: catchUp must be 'none' (run the current period) or 'last' (run the latest missed period first) (got ${typeof catchUp === 'string' ? JSON.stringify(catchUp) : String(catchUp)}).`,
    );
  }
  return { minIntervalMs: checkDuration(minIntervalMs, 'minIntervalMs', verb, 0), catchUp };
}

type Claim =
  | {
      readonly claimed: true;
      readonly period: RunOncePeriod;
      readonly missed: number;
      /** The claim's row: the attempts a run reads next come with it (see claimStatement). */
      readonly row: Row;
    }
  | { readonly claimed: false; readonly reason: 'done' | 'too-soon'; readonly period: RunOncePeriod };

/**
 * Claims the job's period in its transaction (see claimStatement): for a cron schedule, after
 * reading the transaction's `now()` to cut the period from. Throws `ScheduleMismatchError` when the
 * row records another schedule (nothing was written then).
 */
async function claimPeriod(
  connection: PortConnection,
  key: BigintLockKey,
  schedule: Schedule,
  limits: Pick<ClaimRequest, 'minIntervalMs' | 'catchUp'>,
  verb: string,
  beforeClaim: () => Promise<void>,
): Promise<Claim> {
  let row: Row;
  try {
    await beforeClaim();
    let cron: ClaimRequest['cron'];
    if ('cron' in schedule) {
      const [now] = await connection.query(nowStatement());
      const { cron: expression, timeZone } = schedule.spec;
      cron = { expression, timeZone, ...cronPeriod(schedule.cron, Number(cell(now ?? {}, 'ms'))) };
    }
    const perMs = schedule.spec.kind === 'per' ? schedule.spec.perMs : undefined;
    const [claimed] = await connection.query(claimStatement(key, { perMs, cron, ...limits }));
    row = claimed ?? {};
  } catch (error) {
    if (sqlStateOf(error) === SERIALIZATION_FAILURE) throw new Busy(error);
    throw jobsTableError(error, key, verb, 'recording the run under');
  }
  const period = periodOf(row);
  const stored = conflictsWith(
    schedule.spec,
    cell(row, 'stored'),
    cell(row, 'storedcron'),
    cell(row, 'storedzone'),
  );
  if (stored !== undefined) throw scheduleMismatch(key, schedule.spec, stored, verb);
  const prev = cell(row, 'prev');
  const previous = prev === null || prev === undefined ? undefined : Number(prev);
  if (Number(cell(row, 'claimed')) === 1) {
    return {
      claimed: true,
      period,
      missed: missedPeriods(schedule, previous, period.start.getTime()),
      row,
    };
  }
  const done = previous !== undefined && previous >= period.start.getTime();
  return { claimed: false, reason: done ? 'done' : 'too-soon', period };
}

/**
 * `transaction` for a call whose port's transaction has a timer (Prisma's `timeout`): without one
 * given, the run's whole budget (every attempt's maxRunMs, the delays, pglock's closing statements);
 * one given that is shorter is refused before any SQL, rather than expiring under the job.
 */
function withRunBudget<Db, Tx>(
  scope: VerbScope<Db, Tx>,
  options: RunOnceOptions,
  budgetMs: number | undefined,
  verb: string,
): RunOnceOptions['transaction'] {
  const given = options.transaction;
  if (budgetMs === undefined || !scope.port.transactionSettings.includes('timeout')) return given;
  // Anything but a plain object goes to the settings check as given, which refuses it.
  if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given)))
    return given;
  const timeout = given?.timeout;
  // The factory's default timeout is for its transactions in general: this run's budget is more specific.
  if (timeout === undefined) {
    const fallback = scope.defaults.transaction?.timeout;
    return { ...given, timeout: typeof fallback === 'number' ? Math.max(fallback, budgetMs) : budgetMs };
  }
  if (typeof timeout === 'number' && timeout < budgetMs) {
    throw new InvalidLockOptionsError(
      `${verb}: transaction.timeout (${timeout} ms) is shorter than this run may take (${budgetMs} ms: maxRunMs for each attempt, the retry delays and pglock's closing statements): ${scope.port.name} would end the transaction under the job. ` +
        'Raise transaction.timeout to at least that, or drop it and pglock sets it.',
    );
  }
  return given;
}

/**
 * The period of a call that found the job busy, read on the connection the call ran on: nested in a
 * running callback, that callback's transaction (whose connection the call holds already: asking the
 * pool for another one can wait forever when every pooled connection runs such a callback).
 */
async function currentPeriod<Db, Tx>(
  scope: VerbScope<Db, Tx>,
  key: BigintLockKey,
  schedule: Schedule,
  verb: string,
): Promise<RunOncePeriod> {
  const statement = 'cron' in schedule ? nowStatement() : periodStatement(schedule.spec.perMs);
  let row: Row | undefined;
  try {
    const connection = nestingConnection(scope);
    [row] = await (connection === undefined
      ? scope.port.query(scope.db, statement)
      : connection.query(statement));
  } catch (error) {
    throw queryFailed({ keys: [key] }, verb, 'reading the period of', error);
  }
  if (!('cron' in schedule)) return periodOf(row);
  const { start, end } = cronPeriod(schedule.cron, Number(cell(row ?? {}, 'ms')));
  return Object.freeze({ start: new Date(start), end: new Date(end) });
}

function scheduleMismatch(key: BigintLockKey, schedule: JobSchedule, stored: JobSchedule, verb: string) {
  const reset = `UPDATE ${JOBS_TABLE} SET per_ms = NULL, cron = NULL, time_zone = NULL, period_start = NULL, period_end = NULL WHERE key = ${String(key.value)};`;
  return new ScheduleMismatchError(
    `${verb}: the job ${formatLockKey(key)} runs on ${describeSchedule(stored)} (recorded in ${JOBS_TABLE} by its earlier runs), but this call asks for ${describeSchedule(schedule)}; nothing ran. ` +
      `One name is one schedule: periods of another schedule would read the job's last run wrong. ` +
      `For a second schedule, use another name. To move this job to the new schedule once no caller uses the old one, reset its row: ` +
      `${reset} (docs/scheduling.md, "Changing a schedule").`,
    { keys: [key], schedule, storedSchedule: stored },
  );
}

function periodOf(row: Row | undefined): RunOncePeriod {
  const start = Number(cell(row ?? {}, 'start'));
  const end = Number(cell(row ?? {}, 'finish'));
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end))
    throw new Error('pglock bug: no period in the claim');
  return Object.freeze({ start: new Date(start), end: new Date(end) });
}
