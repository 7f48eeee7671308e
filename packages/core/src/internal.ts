/**
 * Not public API: the tools pglock's own packages (adapters, the CLI, the test kit, the bench)
 * share beyond the port. Anything here may change or go in any release, without a changeset entry;
 * an adapter outside this repository builds on `@pglock/core/adapter` and the driver entries.
 *
 * @module @pglock/core/internal
 * @internal
 */

export { sendBatchLock } from './batch-lock.ts';
export { inspectLocksStatement, lockTag } from './inspect-locks.ts';
export { electStatement } from './jobs-table.ts';
export { checkDuration, type LockRequest, lockRequest, MAX_DURATION_MS } from './lock-options.ts';
export { lockStatements, sessionUnlockStatements, timedLockStatement } from './lock-statements.ts';
export { currentLockConnection } from './nesting.ts';
export { checkOptionKeys } from './option-keys.ts';
