/**
 * PostgreSQL advisory locks for Prisma 7: a client extension around interactive and batch
 * transactions.
 *
 * @module @pglock/prisma
 */

export * from '@pglock/core';
export {
  advisoryLocks,
  inspectLocks,
  isLocked,
  lock,
  tryLock,
  tryWithLock,
  withLock,
} from './advisory-locks.ts';
export type {
  PrismaBatchLockOptions,
  PrismaClientLike,
  PrismaLocksOptions,
  PrismaRawQueryable,
  PrismaTransactionLike,
  PrismaTransactionSettings,
  PrismaWithLockOptions,
  TxOf,
} from './prisma-types.ts';
