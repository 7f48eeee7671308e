import { AdvisoryLockError, InvalidLockOptionsError, type TransactionDriver } from '@pglock/core';
import type { Kysely, Transaction } from 'kysely';
import { kyselyExecutor } from './kysely-executor.ts';
import type { AccessMode, IsolationLevel } from './kysely-types.ts';

/** How `withLock` opens its transaction, mapped onto Kysely's transaction builder. */
export interface TransactionSettings {
  readonly isolationLevel?: IsolationLevel | undefined;
  readonly accessMode?: AccessMode | undefined;
}

const isolationLevels: readonly string[] = [
  'read uncommitted',
  'read committed',
  'repeatable read',
  'serializable',
] satisfies IsolationLevel[];
const accessModes: readonly string[] = ['read only', 'read write'] satisfies AccessMode[];

/** Checks the settings before any SQL (Kysely would throw a plain Error only when the transaction starts). */
export function checkSettings(settings: TransactionSettings): void {
  const { isolationLevel, accessMode } = settings;
  if (isolationLevel !== undefined && !isolationLevels.includes(isolationLevel)) {
    throw new InvalidLockOptionsError(
      `isolationLevel must be one of ${isolationLevels.join(', ')} (got ${String(isolationLevel)}).`,
    );
  }
  if (accessMode !== undefined && !accessModes.includes(accessMode)) {
    throw new InvalidLockOptionsError(
      `accessMode must be one of ${accessModes.join(', ')} (got ${String(accessMode)}).`,
    );
  }
}

/** Throws when `db` is a transaction: Kysely cannot open one inside another. */
export function assertNotTransaction(db: { readonly isTransaction: boolean }, what: string): void {
  if (db.isTransaction) {
    throw new AdvisoryLockError(
      'LOCK_USAGE',
      `${what} opens its own connection or transaction, and was given a Kysely transaction; inside a transaction use lock(trx, …) or tryLock(trx, …), or pass the root Kysely instance.`,
    );
  }
}

/**
 * core's {@link TransactionDriver} over `db.transaction()`: Kysely pins one connection, commits when
 * the body resolves and rolls back when it throws. A wait is cancelled from `db`'s other connections.
 */
export function kyselyTransactionDriver<DB>(
  db: Kysely<DB>,
  settings: TransactionSettings,
): TransactionDriver<Transaction<DB>> {
  return {
    executor: (trx) => kyselyExecutor(trx, db),
    transaction(body) {
      let builder = db.transaction();
      if (settings.isolationLevel !== undefined) builder = builder.setIsolationLevel(settings.isolationLevel);
      if (settings.accessMode !== undefined) builder = builder.setAccessMode(settings.accessMode);
      return builder.execute(body);
    },
  };
}
