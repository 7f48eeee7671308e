/**
 * PostgreSQL advisory locks for node-postgres: transaction-scoped `withLock` and session locks.
 *
 * @module @pglock/pg
 */

export * from '@pglock/core';
export { advisoryLocks, type PgAdvisoryLocks } from './advisory-locks.ts';
export { sendCancelRequest } from './cancel-request.ts';
export type {
  PgClientLike,
  PgPoolClientLike,
  PgPoolLike,
  PgQueryable,
  PgQueryResultLike,
} from './pg-types.ts';
export {
  acquireSessionLock,
  type SessionLockOptions,
  tryAcquireSessionLock,
  withSessionLock,
} from './session-lock.ts';
export type { IsolationLevel } from './transaction-driver.ts';
export {
  inspectLocks,
  isLocked,
  lock,
  type PgLockOptions,
  tryLock,
  tryWithLock,
  withLock,
} from './with-lock.ts';
