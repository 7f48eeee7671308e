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
  lock,
  type PgAdvisoryLocks,
  type PgTransactionSettings,
  type PgWithLockOptions,
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
