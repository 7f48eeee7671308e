import { LockDeadlockError, type LockNotAcquiredError, type LockQueryError } from './errors.ts';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import { keysBySpace, timedLockStatement } from './lock-statements.ts';
import { describeKeys, notAcquiredError, queryFailed } from './messages.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import { type Statement, type StatementText, statementText } from './statement.ts';

// Both lock spaces in one statement, one budget: `prev` fixes the deadline once; each space's
// subquery sets the budget left before each of its keys (volatile target list, never flattened);
// UNION ALL reads `ints` to the end before it starts on `pairs`, so bigint keys are taken first, in
// array order (the canonical order); the final aggregate restores the caller's lock_timeout.
const budget =
  "set_config('lock_timeout', greatest(1, ceil(extract(epoch FROM p.deadline - clock_timestamp()) * 1000))::bigint::text, true) AS budget";

function bothSpacesText(shared: boolean): string {
  const lock = shared ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  return (
    "WITH prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS lock_timeout, " +
    "clock_timestamp() + $1::text::int * interval '1 millisecond' AS deadline), " +
    `ints AS MATERIALIZED (SELECT ${lock}(u.k) FROM (SELECT s.*, ${budget} ` +
    'FROM prev AS p, unnest($2::text::bigint[]) WITH ORDINALITY AS s(k, i)) AS u), ' +
    `pairs AS MATERIALIZED (SELECT ${lock}(u.a, u.b) FROM (SELECT s.*, ${budget} ` +
    'FROM prev AS p, unnest($3::text::int4[], $4::text::int4[]) WITH ORDINALITY AS s(a, b, i)) AS u) ' +
    "SELECT count(*)::int AS locked, set_config('lock_timeout', (SELECT lock_timeout FROM prev), true) AS restored " +
    'FROM (SELECT 1 FROM ints UNION ALL SELECT 1 FROM pairs) AS l'
  );
}

const bothSpaces = new Map<boolean, StatementText>();

/**
 * The one statement that takes every key inside a transaction whose statements another
 * party sends (Prisma's `$transaction([…])`: pglock cannot run a second statement, or react between
 * two): it waits at most `timeoutMs` over every key and both lock spaces, and **raises**
 * 55P03 when a key is not granted in time, so the transaction fails instead of running unlocked. A
 * try (`timeoutMs: 0`) waits at most 1 ms (`lock_timeout` cannot be zero). The caller's
 * `lock_timeout` is restored. Map its failure with {@link batchLockError}.
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core/internal';
 * import { batchLockStatement } from './batch-lock.ts';
 *
 * const { keys } = lockRequest(['account:1', { pair: [7, 1] }]);
 * const statement = batchLockStatement(keys, false, 500);
 * ```
 */
export function batchLockStatement(keys: readonly LockKey[], shared: boolean, timeoutMs: number): Statement {
  const budgetMs = Math.max(1, timeoutMs);
  if (keysBySpace(keys).length === 1) return timedLockStatement(keys, 'transaction', shared, budgetMs);
  let text = bothSpaces.get(shared);
  if (text === undefined) {
    text = statementText(bothSpacesText(shared));
    bothSpaces.set(shared, text);
  }
  const ints: string[] = [];
  const firsts: number[] = [];
  const seconds: number[] = [];
  for (const key of keys) {
    if (key.form === 'bigint') ints.push(String(key.value));
    else {
      firsts.push(key.pair[0]);
      seconds.push(key.pair[1]);
    }
  }
  return text.bind([
    String(budgetMs),
    `{${ints.join(',')}}`,
    `{${firsts.join(',')}}`,
    `{${seconds.join(',')}}`,
  ]);
}

/**
 * The typed error for a failed {@link batchLockStatement}: `LockNotAcquiredError` for 55P03 (not
 * granted within the budget), `LockDeadlockError` for 40P01, else `LockQueryError` with the driver
 * error as `cause`.
 *
 * @example
 * ```ts
 * import { batchLockError } from './batch-lock.ts';
 *
 * throw batchLockError(request, prismaError, '$lock');
 * ```
 */
export function batchLockError(
  request: LockRequest,
  error: unknown,
  verb: string,
): LockNotAcquiredError | LockDeadlockError | LockQueryError {
  const state = sqlStateOf(error);
  if (state === SqlState.lockNotAvailable) return notAcquiredError(request, verb);
  if (state === SqlState.deadlockDetected) {
    return new LockDeadlockError(
      `${verb}: PostgreSQL detected a deadlock while waiting for the ${describeKeys(request)}; another session holds a lock this one waits for and waits for one this one holds. Take locks in one order, or pass all keys to one call.`,
      { keys: request.keys, cause: error },
    );
  }
  return queryFailed(request, verb, 'locking', error);
}

/**
 * Sends the {@link batchLockStatement} of `request` with `send`, and resolves once it ran. Only the
 * statement's own failure (one with a SQLSTATE) is the lock's, and becomes {@link batchLockError};
 * any other (the batch transaction's) stays as it is.
 *
 * @example
 * ```ts
 * import { sendBatchLock } from '@pglock/core/internal';
 *
 * await sendBatchLock(request, (s) => prisma.$queryRawUnsafe(s.text, ...s.values), '$lock');
 * ```
 */
export function sendBatchLock(
  request: LockRequest,
  send: (statement: Statement) => PromiseLike<unknown>,
  verb: string,
): Promise<undefined> {
  const statement = batchLockStatement(request.keys, request.shared, request.timeoutMs ?? 0);
  return Promise.resolve(send(statement)).then(
    () => undefined,
    (error: unknown) => {
      throw sqlStateOf(error) === undefined ? error : batchLockError(request, error, verb);
    },
  );
}
