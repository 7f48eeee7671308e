/**
 * The PostgreSQL advisory-lock protocol behind pglock: keys, statements, typed errors, inspection.
 *
 * @module @pglock/core
 */

export { type AcquireContext, abortedError, acquireLocks, describeKeys } from './acquire-locks.ts';
export { deriveKey } from './derive-key.ts';
export {
  type LockAcquiredEvent,
  type LockEventBase,
  type LockLostEvent,
  type LockNotAcquiredEvent,
  type LockReleasedEvent,
  type LockRequestedEvent,
  LockTrace,
  lockChannels,
} from './diagnostics.ts';
export {
  AdvisoryLockError,
  type AdvisoryLockErrorCode,
  type AdvisoryLockErrorOptions,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockAbortedError,
  LockDeadlockError,
  LockLostError,
  LockNotAcquiredError,
} from './errors.ts';
export {
  type AdvisoryLockInfo,
  holdsLock,
  inspectLocks,
  inspectLocksStatement,
  isLocked,
  lockTag,
} from './inspect-locks.ts';
export type { LockExecutor } from './lock-executor.ts';
export {
  type BigintLockKey,
  compareLockKeys,
  formatLockKey,
  isLockKey,
  type LockKey,
  type LockKeyInput,
  type LockKeyOptions,
  lockKey,
  type PairLockKey,
} from './lock-key.ts';
export {
  DEFAULT_MAX_KEYS,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  lockRequest,
  withDefaults,
} from './lock-options.ts';
export {
  backendPidStatement,
  type LockScope,
  type LockStatements,
  lockStatements,
  releaseStatements,
  sessionUnlockStatements,
} from './lock-statements.ts';
export {
  type HeartbeatOptions,
  holdSessionLock,
  type PinnedSession,
  runWithSessionLock,
  type SessionLock,
} from './session-lock-handle.ts';
export { acquireSessionLocks, releaseSessionLocks } from './session-locks.ts';
export { SqlState, sqlStateOf } from './sql-state.ts';
export { type Statement, statement } from './statement.ts';
export {
  assertNotAborted,
  lockInTransaction,
  notAcquiredError,
  runTryWithLock,
  runWithLock,
  type TransactionDriver,
  type TryResult,
  tryLockInTransaction,
} from './with-lock.ts';
