/**
 * PostgreSQL advisory locks for Prisma 7: a client extension around interactive transactions.
 *
 * @module @pglock/prisma
 */

export * from '@pglock/core';
export { advisoryLocks } from './advisory-locks.ts';
export type {
  PrismaClientLike,
  PrismaIsolationLevel,
  PrismaRawQueryable,
  PrismaTransactionLike,
  PrismaTransactionOptions,
  TxOf,
} from './prisma-types.ts';
export { PRISMA_DEFAULT_TIMEOUT_MS } from './transaction-budget.ts';
export {
  DEFAULT_IN_TRANSACTION_WAIT_MS,
  inspectLocks,
  isLocked,
  lock,
  type PrismaLockOptions,
  tryLock,
  tryWithLock,
  withLock,
} from './with-lock.ts';
