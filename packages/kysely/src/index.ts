/**
 * PostgreSQL advisory locks for Kysely transactions and pinned connections.
 *
 * @module @pglock/kysely
 */

export * from '@pglock/core';
export { advisoryLocks, type KyselyAdvisoryLocks } from './advisory-locks.ts';
export { statementSql } from './kysely-executor.ts';
export type {
  AccessMode,
  IsolationLevel,
  KyselyExecutorLike,
  KyselyTransactionLike,
} from './kysely-types.ts';
export {
  acquireSessionLock,
  type SessionLockOptions,
  tryAcquireSessionLock,
  withSessionLock,
} from './session-lock.ts';
export type { TransactionSettings } from './transaction-driver.ts';
export {
  inspectLocks,
  isLocked,
  type KyselyLockOptions,
  lock,
  tryLock,
  tryWithLock,
  withLock,
} from './with-lock.ts';
