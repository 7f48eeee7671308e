import { TransactionRolledBackError } from '../errors.ts';
import { SqlState, sqlStateOf } from '../sql-state.ts';

/**
 * The error for a transaction whose callback resolved but whose driver would not commit it, or
 * `undefined` when `error` says something else. Drivers refuse in two ways: PGlite answers a COMMIT
 * that PostgreSQL turned into ROLLBACK with 25P02; postgres.js's `begin` (`rethrowsFailedStatement`)
 * sends no COMMIT at all and rethrows the failed statement's error, so any SQL error but the
 * COMMIT's own. (node-postgres reports a failed transaction in its status, which core reads.)
 *
 * @example
 * ```ts
 * import { refusedCommitError } from '@pglock/core/drivers/postgres-js';
 *
 * try {
 *   await db.transaction(body);
 * } catch (error) {
 *   throw refusedCommitError(error, true, 'withLock') ?? error;
 * }
 * ```
 */
export function refusedCommitError(
  error: unknown,
  rethrowsFailedStatement: boolean,
  verb: string,
): TransactionRolledBackError | undefined {
  const state = sqlStateOf(error);
  const ofCommit = /^commit$/i.test(String((error as { query?: unknown } | null)?.query));
  if (state !== SqlState.inFailedTransaction && !(rethrowsFailedStatement && !!state && !ofCommit)) {
    return undefined;
  }
  return new TransactionRolledBackError(
    `${verb}: the callback resolved, but a statement in its transaction had failed, so the transaction was rolled back and nothing it wrote was saved. Let the statement’s error leave the callback, or wrap the statement that may fail in a nested ${verb} (a savepoint).`,
    { cause: error },
  );
}
