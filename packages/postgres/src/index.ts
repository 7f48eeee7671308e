/**
 * PostgreSQL advisory locks for postgres.js without an ORM: transaction-scoped `withLock` in
 * `sql.begin`, `lock(tx)` in your own transaction, session locks on a connection of their own, `leader`
 * and `runOnce`.
 *
 * @module @pglock/postgres
 */

export * from '@pglock/core';
export * from './advisory-locks.ts';
export type * from './postgres-types.ts';
