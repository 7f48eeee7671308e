/**
 * PostgreSQL advisory locks for Prisma 7: a client extension around interactive and batch
 * transactions.
 *
 * @module @pglock/prisma
 */

export * from '@pglock/core';
export * from './advisory-locks.ts';
export type * from './prisma-types.ts';
