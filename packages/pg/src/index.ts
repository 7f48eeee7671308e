/**
 * PostgreSQL advisory locks for node-postgres: transaction-scoped `withLock` and session locks.
 *
 * @module @pglock/pg
 */

export * from '@pglock/core';
export {
  acquireSessionLock,
  advisoryLocks,
  inspectLocks,
  isLocked,
  leader,
  lock,
  type PgAdvisoryLocks,
  type PgRunOnceOptions,
  type PgTransactionSettings,
  type PgWithLockOptions,
  runOnce,
  tryAcquireSessionLock,
  tryLock,
  tryWithLock,
  withLock,
  withSessionLock,
} from './advisory-locks.ts';
export type {
  ClientOf,
  PgClientLike,
  PgPoolClientLike,
  PgPoolLike,
  PgQueryable,
  PgQueryResultLike,
  PgTransactionClient,
} from './pg-types.ts';
