import type { DurationString } from './duration.ts';
import { parseDuration } from './duration.ts';
import { InvalidLockKeyError, InvalidLockOptionsError } from './errors.ts';
import { ScheduleMismatchError } from './job-errors.ts';
import { checkRunLimits, JobRun, type RetryPolicy, runBudgetMs } from './job-run.ts';
import { claimStatement, JOBS_TABLE, jobsTableError, periodStatement } from './jobs-table.ts';
import { type BigintLockKey, formatLockKey, lockKey } from './lock-key.ts';
import type { Row } from './lock-port.ts';
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
 * One period of a `runOnce` job: `[start, end)`, epoch-aligned in UTC on the database server's clock.
 * It is the period of the job's transaction's `now()`, so `now()` (and `DEFAULT now()`) in the job
 * always falls inside it.
 */
export interface RunOncePeriod {
  readonly start: Date;
  readonly end: Date;
}

/**
 * Options of `runOnce`.
 *
 * @example
 * ```ts
 * import type { RunOnceOptions } from '@pglock/core';
 *
 * const hourly: RunOnceOptions = { per: '1h' };
 * const patient: RunOnceOptions = { per: 30_000, timeoutMs: 5_000, namespace: 'billing' };
 * // At most a minute per run, and two more attempts in the period when it throws.
 * const bounded: RunOnceOptions = { per: '1h', maxRunMs: 60_000, retry: { limit: 2, delayMs: 5_000 } };
 * ```
 */
export interface RunOnceOptions<S extends TransactionSettings = TransactionSettings> {
  /**
   * The period: milliseconds, or `'30s'`, `'15m'`, `'1h'`, `'1d'` (a whole number and one unit of
   * ms, s, m, h, d; at most 2^31-1 ms, about 24.8 days). Periods are cut from the database server's
   * clock (`now()` of the job's transaction), epoch-aligned in UTC: `'1d'` starts at 00:00 UTC, `'7d'`
   * on Thursdays (1970-01-01 was one). One name is one schedule: the job's row records `per`, and a
   * call with another `per` rejects with `ScheduleMismatchError`.
   */
  readonly per: number | DurationString;
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

/** What the job gets besides the transaction. */
export interface RunOnceContext {
  /** The period it runs for. */
  readonly period: RunOncePeriod;
  /**
   * Aborts when the run went over `maxRunMs` (`reason`: `JobTimedOutError`) or the call's own
   * `signal` fired (its reason). Pass it on to what the job awaits (`fetch(url, { signal })`).
   */
  readonly signal: AbortSignal;
  /** 1 for the period's first run, 2 for its first retry, and so on (counted across processes). */
  readonly attempt: number;
}

/**
 * What `runOnce` resolves: `ran: true` with the job's value when this call ran it, else why not:
 * `'done'` (a run of this period committed already), `'busy'` (another caller is running it now)
 * or, with `retry`, `'failed'` (the period has had its `limit + 1` attempts; `attempts` says how many).
 */
export type RunOnceResult<T> =
  | { readonly ran: true; readonly value: T; readonly period: RunOncePeriod }
  | { readonly ran: false; readonly reason: 'done' | 'busy'; readonly period: RunOncePeriod }
  | {
      readonly ran: false;
      readonly reason: 'failed';
      readonly period: RunOncePeriod;
      readonly attempts: number;
    };

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
    throw new InvalidLockOptionsError(`${verb}: options must be an object with per, e.g. { per: '1h' }.`);
  }
  checkOptionKeys(options, RUN_ONCE_OPTION_KEYS, verb);
  if (typeof fn !== 'function') throw new InvalidLockOptionsError(`${verb}: the job must be a function.`);
  const perMs = parseDuration(options.per, 'per', verb);
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
  const claim = claimStatement(key, perMs);
  let outcome: TryResult<RunOnceResult<T>>;
  try {
    const locked = runLocked(
      scope,
      key,
      async (tx: Tx): Promise<RunOnceResult<T>> => {
        const connection = contextOfTransaction(tx)?.connection;
        if (connection === undefined) throw new Error('pglock bug: runOnce ran outside its lock context');
        let rows: readonly Row[];
        try {
          await job.beforeClaim(connection);
          rows = await connection.query(claim);
        } catch (error) {
          if (sqlStateOf(error) === SERIALIZATION_FAILURE) throw new Busy(error);
          throw jobsTableError(error, key, verb, 'recording the run under');
        }
        const period = periodOf(rows[0]);
        const stored = cell(rows[0] ?? {}, 'stored');
        if (stored !== null && stored !== undefined && Number(stored) !== perMs)
          throw scheduleMismatch(key, perMs, Number(stored), verb);
        if (Number(cell(rows[0] ?? {}, 'claimed')) !== 1) return { ran: false, reason: 'done', period };
        return { ...(await job.run(connection, tx, period, fn)), period };
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
      return { ran: true, value: job.committed.value as T, period: job.period as RunOncePeriod };
    if (!(error instanceof Busy)) throw error;
    outcome = { acquired: false };
  }
  if (outcome.acquired) return outcome.value;
  return { ran: false, reason: 'busy', period: await currentPeriod(scope, key, perMs, verb) };
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
  perMs: number,
  verb: string,
): Promise<RunOncePeriod> {
  const statement = periodStatement(perMs);
  try {
    const connection = nestingConnection(scope);
    const [row] = await (connection === undefined
      ? scope.port.query(scope.db, statement)
      : connection.query(statement));
    return periodOf(row);
  } catch (error) {
    throw queryFailed({ keys: [key] }, verb, 'reading the period of', error);
  }
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

function scheduleMismatch(key: BigintLockKey, perMs: number, storedPerMs: number, verb: string) {
  return new ScheduleMismatchError(
    `${verb}: the job ${formatLockKey(key)} runs per ${describePer(storedPerMs)} (recorded in ${JOBS_TABLE} by its earlier runs), but this call asks for per ${describePer(perMs)}; nothing ran. ` +
      `One name is one schedule: a period of another length would read the job's last run wrong. ` +
      `For a second schedule, use another name. To move this job to the new per once no caller uses the old one, reset its row: ` +
      `UPDATE ${JOBS_TABLE} SET per_ms = NULL, period_start = NULL WHERE key = ${String(key.value)}; (docs/scheduling.md, "Changing per").`,
    { keys: [key], perMs, storedPerMs },
  );
}

function periodOf(row: Row | undefined): RunOncePeriod {
  const start = Number(cell(row ?? {}, 'start'));
  const end = Number(cell(row ?? {}, 'finish'));
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end))
    throw new Error('pglock bug: no period in the claim');
  return Object.freeze({ start: new Date(start), end: new Date(end) });
}
