/**
 * PostgreSQL advisory locks for Drizzle ORM (drizzle-orm 0.44, 0.45 and 1.0) on node-postgres,
 * postgres.js and PGlite: transaction-scoped `withLock`, session locks, and a locked migrator.
 *
 * @module @pglock/drizzle
 */

export * from '@pglock/core';
export * from './advisory-locks.ts';
export type * from './drizzle-types.ts';
export * from './migrate-with-lock.ts';
