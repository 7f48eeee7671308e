import { silentTrace, type Trace } from './diagnostics.ts';
import { AdvisoryLockError, LockAbortedError, LockDeadlockError, LockQueryError } from './errors.ts';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import type { PortConnection, Row } from './lock-port.ts';
import {
  keysBySpace,
  type LockScope,
  lockStatements,
  sessionUnlockStatements,
  timedLockStatement,
  tryStatement,
  waitStatement,
} from './lock-statements.ts';
import { abortedError, describeKeys, queryFailed } from './messages.ts';
import { cell, truthy } from './row-cell.ts';
import { runCancellable } from './run-cancellable.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import { type Statement, statementText } from './statement.ts';

/** One acquisition: where, what, until when, and how a wait is interrupted. */
export interface Acquisition {
  readonly connection: PortConnection;
  readonly request: LockRequest;
  readonly scope: LockScope;
  /** `performance.now()` by which every key must be held; `undefined`: no limit (or a try). */
  readonly deadline: number | undefined;
  /**
   * True when pglock opened the transaction (or savepoint) for this lock and ends it if the
   * acquisition fails: a failed multi-key try then needs no savepoint of its own.
   */
  readonly ownsTransaction: boolean;
  /** Interrupts the running wait (given only with a signal). */
  readonly cancel: (() => Promise<void>) | undefined;
  /** The function the user called, for messages. */
  readonly verb: string;
  readonly trace: Trace;
}

const savepoint = statementText('SAVEPOINT pglock_try').bind([]);
const rollbackToSavepoint = statementText('ROLLBACK TO SAVEPOINT pglock_try').bind([]);
const releaseSavepoint = statementText('RELEASE SAVEPOINT pglock_try').bind([]);

/**
 * Takes every key of the request on the connection, all or none. Resolves `true` when held, `false`
 * when a try found a key taken or the budget ran out (nothing of this call is then held, except
 * transaction-scoped locks in a transaction pglock owns and is about to roll back). Rejects with
 * `LockAbortedError`, `LockDeadlockError` or `LockQueryError` (the driver error as `cause`).
 *
 * After a session-scope rejection whose cause has no SQLSTATE the connection itself failed: the
 * caller must send it nothing more.
 */
export function acquire(a: Acquisition): Promise<boolean> {
  // Nobody listens: no trace to report, so no async layer around the statements.
  if (a.trace !== silentTrace) return traced(a);
  if (a.request.timeoutMs === 0) return attempt(a);
  return a.request.keys.length === 1 && a.cancel === undefined ? waitOne(a) : wait(a);
}

const granted = (): true => true;

/**
 * The common wait, one key without a signal: its one statement, then `true` or {@link waitFailed}.
 * A bounded wait tries the key first: a free key (most calls) is then taken by the cheapest
 * statement there is, and only a taken one pays for the bounded statement, whose longer text costs
 * the server more to parse and plan than the lock itself (docs/protocol.md).
 */
function waitOne(a: Acquisition): Promise<boolean> {
  const { request, deadline } = a;
  if (deadline === undefined) return send(a, waitStatement(request.keys, a.scope, request.shared));
  // Spent in the in-process queue: the general path cleans up and says so.
  if (budgetLeft(deadline) === 0) return wait(a);
  let pending: Promise<readonly Row[]>;
  try {
    pending = a.connection.query(tryStatement(request.keys[0] as LockKey, a.scope, request.shared));
  } catch (error) {
    return Promise.reject(queryFailed(request, a.verb, 'locking', error));
  }
  return pending.then(
    (rows) => (rows.length > 0 && truthy(rows[0] as Row, 'ok') ? true : waitTimed(a, deadline)),
    (error: unknown) => Promise.reject(tryFailed(a, error)),
  );
}

/** The key was taken when tried: wait for it with what is left of the budget. */
function waitTimed(a: Acquisition, deadline: number): Promise<boolean> {
  const left = budgetLeft(deadline);
  if (left === 0) return wait(a);
  return send(a, timedLockStatement(a.request.keys, a.scope, a.request.shared, left));
}

function send(a: Acquisition, stmt: Statement): Promise<boolean> {
  let pending: Promise<unknown>;
  try {
    pending = a.connection.query(stmt);
  } catch (error) {
    return waitFailed(a, true, error, false);
  }
  return pending.then(granted, (error: unknown) => waitFailed(a, true, error, false));
}

/** A failed try, as {@link attempt} reports it. */
function tryFailed(a: Acquisition, error: unknown): unknown {
  if (AdvisoryLockError.is(error)) return error;
  if (a.scope === 'session' && isConnectionLoss(error)) return connectionFailed(a, error, false);
  return queryFailed(a.request, a.verb, 'locking', error);
}

async function traced(a: Acquisition): Promise<boolean> {
  a.trace.requested();
  let held: boolean;
  try {
    held = a.request.timeoutMs === 0 ? await attempt(a) : await wait(a);
  } catch (error) {
    a.trace.notAcquired(
      LockAbortedError.is(error) ? 'aborted' : LockDeadlockError.is(error) ? 'deadlock' : 'error',
      error,
    );
    throw error;
  }
  if (held) a.trace.acquired();
  else a.trace.notAcquired(a.request.timeoutMs === 0 ? 'busy' : 'timeout');
  return held;
}

/** Milliseconds left of the budget (at least 1 while any is left), or 0 when it is spent. */
export function budgetLeft(deadline: number): number {
  const left = Math.ceil(deadline - performance.now());
  return Math.max(left, 0);
}

async function wait(a: Acquisition): Promise<boolean> {
  const { request, connection, scope, deadline } = a;
  // One key is one lock space: no split, no array for it.
  const spaces = request.keys.length === 1 ? undefined : keysBySpace(request.keys);
  const count = spaces === undefined ? 1 : spaces.length;
  for (let space = 0; space < count; space++) {
    const keys = spaces === undefined ? request.keys : (spaces[space] as readonly LockKey[]);
    let stmt: Statement;
    if (deadline === undefined) {
      stmt = waitStatement(keys, scope, request.shared);
    } else {
      const left = budgetLeft(deadline);
      if (left === 0) {
        await cleanUp(a);
        return false;
      }
      stmt = timedLockStatement(keys, scope, request.shared, left);
    }
    // Without a signal the statement runs as is: no outcome object, no extra async layer.
    let failed = false;
    let failure: unknown;
    let aborted = false;
    if (a.cancel === undefined) {
      try {
        await connection.query(stmt);
      } catch (error) {
        failed = true;
        failure = error;
      }
    } else {
      const outcome = await runCancellable(connection, stmt, request.signal, a.cancel);
      aborted = outcome.aborted;
      if (!outcome.ok) {
        failed = true;
        failure = outcome.error;
      }
    }
    if (!failed && !aborted) continue;
    return waitFailed(a, failed, failure, aborted);
  }
  return true;
}

/**
 * After a lock statement failed (`failed`, with `failure`) or its signal fired (`aborted`): session locks taken
 * part-way are released, and the outcome is `false` for a bound that ran out (55P03), else an error.
 */
async function waitFailed(
  a: Acquisition,
  failed: boolean,
  failure: unknown,
  aborted: boolean,
): Promise<false> {
  const { request, scope } = a;
  if (failure !== undefined && !aborted && scope === 'session' && isConnectionLoss(failure)) {
    // The connection itself failed: nothing more may be written to it.
    throw connectionFailed(a, failure, aborted);
  }
  try {
    await cleanUp(a);
  } catch (error) {
    throw queryFailed(request, a.verb, 'releasing', error);
  }
  if (aborted) {
    const held = !failed && scope === 'transaction' && !a.ownsTransaction;
    throw abortedError(request, a.verb, request.signal?.reason, failure, held);
  }
  const state = sqlStateOf(failure);
  if (state === SqlState.lockNotAvailable) return false;
  if (state === SqlState.deadlockDetected) {
    throw new LockDeadlockError(
      `${a.verb}: PostgreSQL detected a deadlock while waiting for the ${describeKeys(request)}; another session holds a lock this one waits for and waits for one this one holds. Take nested locks in one order, or pass all keys to one call.`,
      { keys: request.keys, cause: failure },
    );
  }
  throw queryFailed(request, a.verb, 'locking', failure);
}

async function attempt(a: Acquisition): Promise<boolean> {
  const { request, connection } = a;
  // Transaction-scoped locks cannot be released one by one, so a partly failed multi-key try inside
  // the caller's transaction is undone with a savepoint; in a transaction of ours the rollback does it.
  const needsSavepoint = a.scope === 'transaction' && !a.ownsTransaction && request.keys.length > 1;
  try {
    if (needsSavepoint) await connection.query(savepoint);
    let held = true;
    for (const stmt of lockStatements(request.keys, a.scope, request.shared, 'try')) {
      const rows = await connection.query(stmt);
      if (rows.some((row) => !truthy(row, 'ok'))) {
        held = false;
        break;
      }
    }
    if (!held) {
      if (needsSavepoint) await connection.query(rollbackToSavepoint);
      await cleanUp(a);
    }
    if (needsSavepoint) await connection.query(releaseSavepoint);
    return held;
  } catch (error) {
    if (AdvisoryLockError.is(error)) throw error;
    if (a.scope === 'session' && isConnectionLoss(error)) throw connectionFailed(a, error, false);
    throw queryFailed(request, a.verb, 'locking', error);
  }
}

// A campaign's wait is unlimited whatever the session's own limits are: a statement_timeout or a
// lock_timeout of the role or the pool (a common default) would end it, and a failed campaign backs
// off, which slowed failover from milliseconds to seconds. Neither can be lifted inside the wait's
// own statement (the statement timer is armed when the statement starts), so one statement before
// the wait saves and lifts both, and one after restores them, as a bounded wait's own statement saves
// and restores lock_timeout around its lock. Read in FROM, the saved values exist before the select
// list lifts them.
const liftWaitLimits = statementText(
  "SELECT p.statement_timeout, p.lock_timeout, set_config('statement_timeout', '0', false) AS lifted, " +
    "set_config('lock_timeout', '0', false) AS lifted_lock FROM ROWS FROM (current_setting('statement_timeout'), " +
    "current_setting('lock_timeout')) AS p(statement_timeout, lock_timeout)",
).bind([]);
const restoreWaitLimits = statementText(
  "SELECT set_config('statement_timeout', $1::text, false) AS statement_timeout, set_config('lock_timeout', $2::text, false) AS lock_timeout",
);

/**
 * A session-lock wait without limit that nothing but the caller's signal ends (a leader's campaign):
 * the session's statement_timeout and lock_timeout are lifted for the wait and restored after it,
 * and a wait that the server ended anyway (someone's `pg_cancel_backend`, a lock_timeout set on the
 * way) is waited again at once. Resolves `true` once held; rejects as {@link acquire} does.
 */
export async function waitUnlimited(a: Acquisition): Promise<boolean> {
  const { connection, request, verb } = a;
  const limits = await connection.query(liftWaitLimits).then(
    ([row]) => [String(cell(row ?? {}, 'statement_timeout')), String(cell(row ?? {}, 'lock_timeout'))],
    (error: unknown) => Promise.reject(limitsFailed(a, error)),
  );
  let outcome: unknown;
  let failed = false;
  try {
    for (;;) {
      try {
        // `false` is the end of a lock_timeout; a cancel nobody here asked for is 57014.
        if (await acquire(a)) return true;
      } catch (error) {
        const cancelled =
          LockQueryError.is(error) &&
          !isConnectionFailure(error) &&
          sqlStateOf(error.cause) === SqlState.queryCanceled;
        if (!cancelled) throw error;
      }
      if (request.signal?.aborted) throw abortedError(request, verb, request.signal.reason);
    }
  } catch (error) {
    failed = true;
    outcome = error;
    throw error;
  } finally {
    // Nothing more is written to a connection that failed: it is destroyed, never reused.
    if (!(failed && isConnectionFailure(outcome)) && (limits[0] !== '0' || limits[1] !== '0')) {
      await connection.query(restoreWaitLimits.bind(limits)).catch((error: unknown) => {
        throw limitsFailed(a, error);
      });
    }
  }
}

/** A failed statement around a campaign's wait: a typed error, marked when the connection itself failed. */
function limitsFailed(a: Acquisition, error: unknown): AdvisoryLockError {
  if (AdvisoryLockError.is(error)) return error;
  if (isConnectionLoss(error)) return connectionFailed(a, error, false);
  return queryFailed(a.request, a.verb, 'waiting for', error);
}

/** Session locks taken part-way are released again (only those this backend holds, per `pg_locks`). */
async function cleanUp(a: Acquisition): Promise<void> {
  if (a.scope !== 'session') return;
  for (const stmt of sessionUnlockStatements(a.request.keys, a.request.shared))
    await a.connection.query(stmt);
}

/** A session-lock connection that failed mid-acquisition; `connectionFailed` tells the caller not to reuse it. */
function connectionFailed(a: Acquisition, cause: unknown, aborted: boolean): AdvisoryLockError {
  const error = aborted
    ? abortedError(a.request, a.verb, a.request.signal?.reason, cause)
    : queryFailed(a.request, a.verb, 'waiting for', cause);
  Object.defineProperty(error, connectionFailedMark, { value: true });
  return error;
}

const connectionFailedMark = Symbol('pglock.connectionFailed');

/**
 * The connection itself is gone: no SQLSTATE (a closed socket), a connection exception (class 08),
 * or the server ending the session (57P01 terminated, 57P02 crash shutdown, 57P03 cannot connect
 * now, 57P05 idle session timeout). Nothing more may be written to it.
 */
export function isConnectionLoss(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === undefined || state.startsWith('08') || /^57P0[1235]$/.test(state);
}

/** True for an acquisition error after which the session connection must get no more statements. */
export function isConnectionFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && connectionFailedMark in error;
}
