/**
 * PostgreSQL advisory locks for node-postgres: transaction-scoped `withLock` and session locks.
 *
 * @module @pglock/pg
 */

export * from '@pglock/core';
export * from './advisory-locks.ts';
export type * from './pg-types.ts';
