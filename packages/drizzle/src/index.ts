/**
 * PostgreSQL advisory locks for Drizzle ORM transactions on node-postgres, postgres.js and PGlite, and a locked migrator.
 *
 * @module @pglock/drizzle
 */

export * from '@pglock/core';
export { advisoryLocks, type DrizzleAdvisoryLocks } from './advisory-locks.ts';
export type {
  DrizzleDatabaseLike,
  DrizzleExecutes,
  DrizzleMigratableDatabase,
  DrizzleTransactionConfig,
  DrizzleTransactionLike,
  TxOf,
} from './drizzle-types.ts';
export {
  MIGRATION_LOCK_KEY,
  MIGRATION_LOCK_NAME,
  MIGRATION_LOCK_NAMESPACE,
  type MigrateWithLockConfig,
  migrateWithLock,
} from './migrate-with-lock.ts';
export {
  type DrizzleLockOptions,
  inspectLocks,
  isLocked,
  lock,
  tryLock,
  tryWithLock,
  withLock,
} from './with-lock.ts';
