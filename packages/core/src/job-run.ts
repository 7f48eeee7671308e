import { onAbort } from './abort-listeners.ts';
import { backendAliveStatement } from './backend-statements.ts';
import { watchedConnection } from './backend-watchdog.ts';
import { InvalidLockOptionsError, TransactionRolledBackError } from './errors.ts';
import { freshAnswer } from './fresh-answer.ts';
import { JobTimedOutError, LockTableMissingError } from './job-errors.ts';
import {
  abortTransaction,
  attemptsStatement,
  claimSavepoint,
  commitAndChain,
  type FailedOutcome,
  failureRecordStatement,
  inFlightMarker,
  jobCancelStatement,
  jobSavepoint,
  okRecordStatement,
  rollbackAndChain,
  rollbackToClaim,
  rollbackToJob,
} from './job-outcome-statements.ts';
import { JOBS_TABLE, JOBS_TABLE_UPGRADE_DDL, jobsTableError } from './jobs-table.ts';
import { type BigintLockKey, formatLockKey } from './lock-key.ts';
import { checkDuration } from './lock-options.ts';
import type { PortConnection, Row } from './lock-port.ts';
import { checkOptionKeys } from './option-keys.ts';
import { cell, truthy } from './row-cell.ts';
import { runCancellable, within } from './run-cancellable.ts';
import { SqlState, saysConnectionEnded, sqlStateOf } from './sql-state.ts';
import type { Statement } from './statement.ts';
import type { VerbScope } from './transaction-lock.ts';

// runOnce around the call of its job: the attempts of the period, the job's time limit, and the
// record of how the run ended. run-once.ts claims the period; this file runs what follows.

/**
 * `retry` of `runOnce`: a job that throws is run again, in the same call and the same period, up to
 * `limit` more times, `delayMs` apart.
 *
 * @example
 * ```ts
 * import type { RetryPolicy } from '@pglock/core';
 *
 * const threeMore: RetryPolicy = { limit: 3, delayMs: 2_000 };
 * ```
 */
export interface RetryPolicy {
  /** Retries after the first attempt (0: one attempt per period, then `'failed'`), at most 1000. */
  readonly limit: number;
  /** Milliseconds between a failed attempt and the next (default 0). */
  readonly delayMs?: number | undefined;
}

/** The option keys of `retry`. */
export const RETRY_OPTION_KEYS = ['limit', 'delayMs'] as const;

/** Most retries a period can be given: a bound on a typo (`limit: 1e9`), not a recommendation. */
export const MAX_RETRY_LIMIT = 1_000;

/** `maxRunMs` and `retry`, checked. */
export interface RunLimits {
  readonly maxRunMs: number | undefined;
  readonly retry: { readonly limit: number; readonly delayMs: number } | undefined;
}

/** What a call's job gets besides the transaction (see `RunOnceContext`). */
export interface JobContext<P> {
  readonly period: P;
  readonly signal: AbortSignal;
  readonly attempt: number;
}

/** How the run ended, for run-once.ts: the job's value, or a period whose attempts are used up. */
export type JobOutcome<T> =
  | { readonly ran: true; readonly value: T }
  | { readonly ran: false; readonly reason: 'failed'; readonly attempts: number };

/** Checks `maxRunMs` and `retry` of runOnce's options (before any SQL). */
export function checkRunLimits(
  options: { readonly maxRunMs?: unknown; readonly retry?: unknown },
  verb: string,
  nested: boolean,
): RunLimits {
  const { maxRunMs, retry } = options;
  const max =
    maxRunMs === undefined
      ? undefined
      : checkDuration(maxRunMs, 'maxRunMs', verb, 1, 'omit it to let the job run as long as it takes');
  let policy: RunLimits['retry'];
  if (retry !== undefined) {
    if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
      throw new InvalidLockOptionsError(
        `${verb}: retry must be an object such as { limit: 3, delayMs: 1_000 } (got ${retry === null ? 'null' : typeof retry}).`,
      );
    }
    checkOptionKeys(retry, RETRY_OPTION_KEYS, verb, { prefix: 'retry.', elsewhere: [] });
    const { limit, delayMs } = retry as RetryPolicy;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_RETRY_LIMIT) {
      throw new InvalidLockOptionsError(
        `${verb}: retry.limit must be an integer from 0 to ${MAX_RETRY_LIMIT}: the retries after the first attempt (got ${String(limit)}).`,
      );
    }
    const delay =
      delayMs === undefined ? 0 : checkDuration(delayMs, 'retry.delayMs', verb, 0, 'omit it for no delay');
    policy = Object.freeze({ limit, delayMs: delay });
  }
  if (nested && (max !== undefined || policy !== undefined)) {
    throw new InvalidLockOptionsError(
      `${verb}: ${max !== undefined ? 'maxRunMs' : 'retry'} needs a transaction of runOnce's own, but this call runs inside a running transaction (it nests with a savepoint there, and commits with it): ` +
        `its run cannot be rolled back, recorded and its lock released on its own. Call ${verb} outside the running transaction, or drop the option.`,
    );
  }
  return { maxRunMs: max, retry: policy };
}

/** Time a port whose transaction has a timer (Prisma) must leave a run: attempts, delays, closing. */
export function runBudgetMs(limits: RunLimits): number | undefined {
  if (limits.maxRunMs === undefined) return undefined;
  const attempts = (limits.retry?.limit ?? 0) + 1;
  const delays = (limits.retry?.delayMs ?? 0) * (attempts - 1);
  return attempts * (limits.maxRunMs + PER_ATTEMPT_MS) + delays + CLOSING_MS;
}

/** pglock's statements around one attempt (its savepoint, its record), generously. */
const PER_ATTEMPT_MS = 1_000;
/** Ending a run that went over: the cancel of its statement, the rollback, the record, the commit. */
const CLOSING_MS = 5_000;

/** How long a timed-out run's call waits for its job to settle before it answers without it. */
const SETTLE_GRACE_MS = 100;

/** A signal for a job no limit aborts. */
const NEVER = new AbortController().signal;

type Attempt<T> =
  | { readonly kind: 'ok'; readonly value: T; readonly ms: number }
  | { readonly kind: 'threw'; readonly error: unknown; readonly ms: number }
  | { readonly kind: 'late'; readonly running: Promise<unknown>; readonly abort: AbortController };

/**
 * One runOnce call's run of its job after the claim, in the job's transaction of its own: the
 * claim in a savepoint (so a failed run un-claims its period), each attempt after it (a retry
 * rolls back to its own savepoint), the run's record, and the end of a run that went over `maxRunMs`.
 */
export class JobRun<Db, Tx> {
  readonly #scope: VerbScope<Db, Tx>;
  readonly #key: BigintLockKey;
  readonly #limits: RunLimits;
  readonly #signal: AbortSignal | undefined;
  readonly #verb: string;
  readonly #nested: boolean;
  #timedOut: ((error: JobTimedOutError) => void) | undefined;
  /** The backend the claim ran on (its row's pid), once claimed. */
  #pid: number | undefined;
  /**
   * Rejects with `JobTimedOutError` once a run that went over `maxRunMs` has been rolled back, recorded
   * and its lock released: the call answers then, while its transaction still waits for the job to
   * settle (never resolves otherwise).
   */
  readonly timedOut: Promise<never>;
  /** Set once pglock itself committed the run (an attempt after a failed one): what it resolved. */
  committed: { readonly value: unknown } | undefined;
  /** The period the run claimed. */
  period: { readonly start: Date; readonly end: Date } | undefined;

  constructor(
    scope: VerbScope<Db, Tx>,
    key: BigintLockKey,
    limits: RunLimits,
    signal: AbortSignal | undefined,
    verb: string,
    nested: boolean,
  ) {
    this.#scope = scope;
    this.#key = key;
    this.#limits = limits;
    this.#signal = signal;
    this.#verb = verb;
    this.#nested = nested;
    this.timedOut = new Promise<never>((_, reject) => {
      this.#timedOut = reject;
    });
    this.timedOut.catch(() => undefined);
  }

  /** Before the claim, in a transaction of runOnce's own: the savepoint a failed run rolls back to. */
  async beforeClaim(connection: PortConnection): Promise<void> {
    if (!this.#nested) await connection.query(claimSavepoint);
  }

  /**
   * Runs the job for the claimed `period` (`start`: its epoch ms) and records how it ended. `claimed`:
   * the claim's row, which carries the period's attempts, the server's clock, the backend and its
   * transaction when its `known` is true (jobs-table.ts); else they are read here.
   */
  async run<P extends { readonly start: Date; readonly end: Date }, T>(
    connection: PortConnection,
    tx: Tx,
    period: P,
    fn: (tx: Tx, run: JobContext<P>) => Promise<T>,
    claimed?: Row,
  ): Promise<JobOutcome<T>> {
    const startMs = period.start.getTime();
    this.period = period;
    if (this.#nested) {
      // Nested: the caller's transaction decides; only a run that resolved is recorded, with it.
      const started = performance.now();
      const value = await fn(tx, { period, signal: this.#signal ?? NEVER, attempt: 1 });
      await this.#record(connection, okRecordStatement(this.#key, startMs, 1, elapsed(started)));
      return { ran: true, value };
    }
    const [row] =
      claimed !== undefined && truthy(claimed, 'known')
        ? [claimed]
        : await this.#query(connection, attemptsStatement(this.#key, startMs));
    const prior = Number(cell(row ?? {}, 'attempts') ?? 0);
    // The server's clock, as the local monotonic clock plus an offset: a retry must start in the period.
    const offset = Number(cell(row ?? {}, 'clock')) - performance.now();
    const { retry } = this.#limits;
    if (retry !== undefined && prior > retry.limit) {
      await connection.query(rollbackToClaim);
      return { ran: false, reason: 'failed', attempts: prior };
    }
    this.#pid = Number(cell(row ?? {}, 'pid'));
    const cancel = this.#limits.maxRunMs === undefined ? undefined : this.#canceller(connection, row);
    // From here on pglock's own statements settle also when the connection's backend ends under
    // them (a driver that never settles a statement in flight at a close: backend-watchdog.ts).
    connection = this.#watched(connection, row);
    if (retry !== undefined) await connection.query(jobSavepoint);
    let failedBefore = false;
    for (let attempt = prior + 1; ; attempt++) {
      const outcome = await this.#attempt(tx, fn, period, attempt);
      if (outcome.kind === 'late') return this.#endLate(connection, outcome, attempt, startMs, cancel);
      let error = outcome.kind === 'threw' ? outcome.error : undefined;
      if (outcome.kind === 'ok') {
        try {
          await connection.query(okRecordStatement(this.#key, startMs, attempt, outcome.ms));
          if (!failedBefore) return { ran: true, value: outcome.value };
          // An earlier attempt's statement failed in this transaction: some drivers (postgres.js's
          // `begin`) would refuse to commit it although this attempt rolled that back. pglock commits.
          await connection.query(commitAndChain);
          this.committed = { value: outcome.value };
          return { ran: true, value: outcome.value };
        } catch (recordError) {
          if (sqlStateOf(recordError) !== SqlState.inFailedTransaction) throw this.#tableError(recordError);
          error = rolledBack(this.#key, this.#verb, recordError);
        }
      }
      failedBefore = true;
      const { ms } = outcome;
      if (
        retry !== undefined &&
        attempt <= retry.limit &&
        !this.#signal?.aborted &&
        !saysConnectionEnded(error)
      ) {
        const next = offset + performance.now() + retry.delayMs;
        if (next < period.end.getTime()) {
          await connection.query(rollbackToJob);
          if (await this.#delay(retry.delayMs)) continue;
        }
      }
      await this.#closeFailed(connection, { outcome: 'failed', startMs, attempt, ms, error });
      throw error;
    }
  }

  /** One call of the job, raced against `maxRunMs`. */
  async #attempt<P, T>(
    tx: Tx,
    fn: (tx: Tx, run: JobContext<P>) => Promise<T>,
    period: P,
    attempt: number,
  ): Promise<Attempt<T>> {
    const abort = new AbortController();
    const signal = this.#signal;
    const unlink = signal === undefined ? undefined : onAbort(signal, () => abort.abort(signal.reason));
    const started = performance.now();
    const running = Promise.resolve().then(() => fn(tx, { period, signal: abort.signal, attempt }));
    const settled = running.then(
      (value): Attempt<T> => ({ kind: 'ok', value, ms: elapsed(started) }),
      (error: unknown): Attempt<T> => ({ kind: 'threw', error, ms: elapsed(started) }),
    );
    try {
      const { maxRunMs } = this.#limits;
      if (maxRunMs === undefined) return await settled;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<Attempt<T>>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'late', running, abort }), maxRunMs);
      });
      try {
        return await Promise.race([settled, late]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      unlink?.();
    }
  }

  /**
   * The job went over `maxRunMs`: abort its signal; cancel the statement it has in flight; roll back
   * to before the claim (the job's writes and the claim); record `'timed-out'` (while the lock is
   * still held, so the next caller counts this attempt); then `ROLLBACK AND CHAIN` (the lock is
   * released, the period free, and a transaction begins in the same statement) and fail that chained
   * transaction. The call answers now. The connection stays out of the pool, in a failed transaction
   * that holds no lock, until the job settles: the job's statements fail (25P02), and none runs
   * outside a transaction or on a connection that went back to the pool. Then the ORM rolls it back.
   */
  async #endLate(
    connection: PortConnection,
    late: Extract<Attempt<unknown>, { kind: 'late' }>,
    attempt: number,
    startMs: number,
    cancel: (() => Promise<void>) | undefined,
  ): Promise<never> {
    const maxRunMs = this.#limits.maxRunMs as number;
    const error = new JobTimedOutError(
      `${this.#verb}: the job ${formatLockKey(this.#key)} ran longer than its maxRunMs (${maxRunMs} ms) in attempt ${attempt}: its signal was aborted, its transaction rolled back (nothing it wrote was saved) and the period is free again. ` +
        'Make the job honour its signal (pass it to what it awaits, or check signal.aborted between steps), or raise maxRunMs.',
      { keys: [this.#key], maxRunMs, attempt },
    );
    late.abort.abort(error);
    // A connection that closed under the job gets nothing more: the server rolled the transaction
    // back and released the lock, and a statement written to a postgres.js connection that closed
    // kills the process from a timer (porsager/postgres#1208; the chaos run saw this ROLLBACK TO
    // SAVEPOINT written 29 ms after the close).
    if (await this.#backendGone()) return this.#answer(late, error);
    // Settles once the job's statement in flight (if any) has ended, cancelled or not.
    const stop = new AbortController();
    const drained = runCancellable(connection, inFlightMarker, stop.signal, cancel);
    stop.abort();
    await drained;
    const record = failureRecordStatement(this.#key, {
      outcome: 'timed-out',
      periodStartMs: startMs,
      attempts: attempt,
      runMs: maxRunMs,
      error: error.message,
    });
    const control = this.#control();
    let recorded = false;
    if (control !== undefined) {
      // Rolling back to the savepoint frees the claim's row for the record, written beside the job's
      // transaction while the lock is held; the transaction is failed again in the same breath, so
      // whatever the job sends meanwhile fails.
      const [undone] = await Promise.all(
        [rollbackToClaim, abortTransaction].map((s) => settle(connection.query(s))),
      );
      recorded = undone === true && (await settle(control(record)));
    }
    if (!recorded) {
      // No connection beside this one could write it (one connection only): the record in the job's
      // transaction, all four sent at once so that nothing the job sends can come between them.
      const closing = [rollbackToClaim, record, commitAndChain, abortTransaction].map((s) =>
        settle(connection.query(s)),
      );
      const [, , committed] = await Promise.all(closing);
      if (committed) return this.#answer(late, error);
    }
    // Sent together: nothing the job sends can run between the two, in the chained transaction.
    for (let tries = 0; tries < 2; tries++) {
      const [chained] = await Promise.all(
        [rollbackAndChain, abortTransaction].map((s) => settle(connection.query(s))),
      );
      if (chained) break;
    }
    return this.#answer(late, error);
  }

  /** Answers a timed-out call: after its job settled when it honoured its signal, else at once. */
  async #answer(late: Extract<Attempt<unknown>, { kind: 'late' }>, error: JobTimedOutError): Promise<never> {
    // A job that honoured its signal has settled by now: the call answers once its transaction has
    // ended and the connection is back. One that has not is not waited for.
    let timer: NodeJS.Timeout | undefined;
    const settledSoon = await Promise.race([
      late.running.then(
        () => true,
        () => true,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), SETTLE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!settledSoon) {
      this.#timedOut?.(error);
      await late.running.catch(() => undefined);
    }
    throw error;
  }

  /** A run that threw: un-claim, record, commit (releasing the lock); the error is thrown after. */
  async #closeFailed(
    connection: PortConnection,
    run: {
      readonly outcome: FailedOutcome;
      readonly startMs: number;
      readonly attempt: number;
      readonly ms: number;
      readonly error: unknown;
    },
  ): Promise<void> {
    // A job whose connection ended leaves nothing to undo (the server rolled back and released the
    // lock), and a statement written to it now can crash a postgres.js process (porsager/postgres#1208,
    // seen in the chaos run as pglock's own ROLLBACK TO SAVEPOINT): nothing more is sent.
    if (saysConnectionEnded(run.error)) return;
    // The job's own error says nothing of its connection, which may have closed while the job ran
    // (the chaos run saw this ROLLBACK TO SAVEPOINT written 1 ms after a close): asked first, where
    // another connection can answer (a failed run only).
    if (await this.#backendGone()) return;
    try {
      await connection.query(rollbackToClaim);
      await connection.query(
        failureRecordStatement(this.#key, {
          outcome: run.outcome,
          periodStartMs: run.startMs,
          attempts: run.attempt,
          runMs: run.ms,
          error: describeError(run.error),
        }),
      );
      await connection.query(commitAndChain);
    } catch {
      // Unrecorded: the ORM's rollback undoes the claim, and the job's error is what the caller needs.
    }
  }

  /** Waits `ms` between attempts; false when the call's signal ended the wait (no more attempts). */
  async #delay(ms: number): Promise<boolean> {
    const signal = this.#signal;
    if (ms === 0) return !signal?.aborted;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        unlink?.();
        resolve(true);
      }, ms);
      const unlink =
        signal === undefined
          ? undefined
          : onAbort(signal, () => {
              clearTimeout(timer);
              resolve(false);
            });
    });
  }

  /** Runs one statement on a control connection of the port (none where the database has one connection). */
  /**
   * Whether another connection says the claim's backend has ended (`false` when nothing can ask, or
   * no answer came within 2 s: then the connection is used as before).
   */
  async #backendGone(): Promise<boolean> {
    const control = this.#control();
    const pid = this.#pid;
    if (control === undefined || pid === undefined || !Number.isInteger(pid) || pid <= 0) return false;
    try {
      const ask = () => control(backendAliveStatement(pid)) as Promise<readonly Row[]>;
      const rows = await within(freshAnswer(ask), 2_000, 'no answer');
      return Number(cell(rows[0] ?? {}, 'alive')) === 0;
    } catch {
      return false;
    }
  }

  #control(): ((statement: Statement) => Promise<unknown>) | undefined {
    const { port, db } = this.#scope;
    const open = port.controlConnection?.bind(port);
    if (open === undefined || port.cancellation(db) === 'none') return undefined;
    return async (statement) => {
      const control = await within(open(db), 2_000, 'no control connection', (c) => c.release());
      try {
        return await control.query(statement);
      } finally {
        await control.release();
      }
    };
  }

  /**
   * The cancel of the job's statement in flight: by backend pid from a control connection, guarded
   * by the transaction's start (it cannot reach anything after this transaction); else the
   * connection's own protocol cancel (pglock does not hand the connection back while it may be
   * sent); none where nothing can interrupt a statement (one in-process connection).
   */
  #canceller(connection: PortConnection, row: Row | undefined): (() => Promise<void>) | undefined {
    const { port, db } = this.#scope;
    if (port.cancellation(db) === 'none') return undefined;
    const pid = Number(cell(row ?? {}, 'pid'));
    const xact = cell(row ?? {}, 'xact');
    const control = this.#control();
    if (control !== undefined && Number.isInteger(pid) && typeof xact === 'string') {
      const stmt = jobCancelStatement(pid, xact);
      return async () => {
        await control(stmt);
      };
    }
    return connection.cancel === undefined ? undefined : () => (connection.cancel as () => Promise<void>)();
  }

  /** `connection` with a watchdog on its backend, where the claim named the backend (else as is). */
  #watched(connection: PortConnection, row: Row | undefined): PortConnection {
    const pid = Number(cell(row ?? {}, 'pid'));
    if (!Number.isInteger(pid) || pid <= 0) return connection;
    const { port, db } = this.#scope;
    if (port.cancellation(db) === 'none') return connection;
    return watchedConnection(connection, pid, (statement) => port.query(db, statement));
  }

  async #query(connection: PortConnection, statement: Statement): Promise<readonly Row[]> {
    try {
      return await connection.query(statement);
    } catch (error) {
      throw this.#tableError(error);
    }
  }

  async #record(connection: PortConnection, statement: Statement): Promise<void> {
    await this.#query(connection, statement);
  }

  /** A statement on the jobs table failed: a table without this version's columns names the upgrade. */
  #tableError(error: unknown) {
    if (sqlStateOf(error) === SqlState.undefinedColumn) {
      return new LockTableMissingError(
        `${this.#verb}: the table ${JOBS_TABLE} lacks the columns where runOnce records each run (run_ms, outcome, attempts, attempt_period, last_error): it was created by an older pglock. ` +
          `Upgrade it once, in a migration (\`pglock schema\` prints it too; rows already there keep working; docs/scheduling.md has it for Prisma, Drizzle and Kysely):\n\n${JOBS_TABLE_UPGRADE_DDL}\n`,
        { keys: [this.#key], cause: error, ddl: JOBS_TABLE_UPGRADE_DDL, column: 'attempts' },
      );
    }
    return jobsTableError(error, this.#key, this.#verb, 'recording the run under');
  }
}

function elapsed(started: number): number {
  return Math.max(0, Math.round(performance.now() - started));
}

/** Resolves true when the statement succeeded, false when it failed (never rejects). */
function settle(query: Promise<unknown>): Promise<boolean> {
  return query.then(
    () => true,
    () => false,
  );
}

/** `last_error`: the error's name and message (a thrown non-error as text). */
function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  try {
    return typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    return String(error);
  }
}

function rolledBack(key: BigintLockKey, verb: string, cause: unknown): TransactionRolledBackError {
  return new TransactionRolledBackError(
    `${verb}: the job ${formatLockKey(key)} resolved, but a statement in its transaction had failed, so PostgreSQL would not commit it: the attempt was rolled back and nothing it wrote was saved. Let the statement's error leave the job, or wrap the statement that may fail in a nested withLock (a savepoint).`,
    { keys: [key], cause },
  );
}
