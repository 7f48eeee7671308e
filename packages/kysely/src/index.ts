/**
 * PostgreSQL advisory locks for Kysely: transaction-scoped `withLock` and `lock(trx)`, and session
 * locks on pinned connections.
 *
 * @module @pglock/kysely
 */

export * from '@pglock/core';
export {
  acquireSessionLock,
  advisoryLocks,
  currentLeader,
  inspectLocks,
  isLocked,
  leader,
  lock,
  observeLeader,
  runOnce,
  tryAcquireSessionLock,
  tryLock,
  tryWithLock,
  withLock,
  withSessionLock,
} from './advisory-locks.ts';
export type {
  KyselyAdvisoryLocks,
  KyselyAdvisoryLocksOptions,
  KyselyRunOnceOptions,
  KyselyTransactionLike,
  KyselyTransactionSettings,
  KyselyWithLockOptions,
} from './kysely-types.ts';
