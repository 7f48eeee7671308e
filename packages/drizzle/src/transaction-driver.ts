import { InvalidLockOptionsError, type TransactionDriver } from '@pglock/core';
import { is } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { drizzleExecutor } from './drizzle-executor.ts';
import type {
  DrizzleDatabaseLike,
  DrizzleExecutes,
  DrizzleTransactionConfig,
  TxOf,
} from './drizzle-types.ts';

const isolationLevels = ['read uncommitted', 'read committed', 'repeatable read', 'serializable'];
const accessModes = ['read only', 'read write'];

/**
 * Checks Drizzle's transaction config before any SQL: Drizzle pastes `isolationLevel` and
 * `accessMode` into the BEGIN text unquoted, and a nested transaction (a savepoint) ignores it.
 */
export function checkTransactionConfig(
  db: DrizzleDatabaseLike,
  config: DrizzleTransactionConfig | undefined,
): DrizzleTransactionConfig | undefined {
  if (config === undefined) return undefined;
  if (typeof config !== 'object' || config === null)
    throw new InvalidLockOptionsError('transaction must be an object of Drizzle transaction options.');
  const { isolationLevel, accessMode, deferrable } = config;
  if (isolationLevel !== undefined && !isolationLevels.includes(isolationLevel)) {
    throw new InvalidLockOptionsError(
      `transaction.isolationLevel must be one of ${isolationLevels.join(', ')} (got ${String(isolationLevel)}).`,
    );
  }
  if (accessMode !== undefined && !accessModes.includes(accessMode)) {
    throw new InvalidLockOptionsError(
      `transaction.accessMode must be one of ${accessModes.join(', ')} (got ${String(accessMode)}).`,
    );
  }
  if (deferrable !== undefined && typeof deferrable !== 'boolean')
    throw new InvalidLockOptionsError('transaction.deferrable must be a boolean.');
  if (is(db, PgTransaction)) {
    throw new InvalidLockOptionsError(
      'transaction options apply to a new transaction, but withLock was given a transaction (it opens a savepoint there). ' +
        'Drop the transaction option, or call withLock on the database.',
    );
  }
  return config;
}

/**
 * core's {@link TransactionDriver} over Drizzle: `db.transaction(body, config)` (BEGIN … COMMIT on
 * one pinned connection, ROLLBACK when `body` throws; a savepoint when `db` is itself a transaction).
 */
export function drizzleTransactionDriver<DB extends DrizzleDatabaseLike>(
  db: DB,
  config: DrizzleTransactionConfig | undefined,
  cancelVia: DrizzleExecutes | undefined,
): TransactionDriver<TxOf<DB>> {
  return {
    transaction: (body) => db.transaction((tx: TxOf<DB>) => body(tx), config),
    executor: (tx) => drizzleExecutor(tx as DrizzleExecutes, cancelVia),
  };
}
