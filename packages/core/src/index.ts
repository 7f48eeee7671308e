/**
 * pglock for apps: keys, options and result types, typed errors, and the diagnostics channels.
 * Adapters (`@pglock/pg`, `@pglock/prisma`, `@pglock/drizzle`, `@pglock/kysely`) re-export exactly
 * this, so one import serves the app. Adapter authors import `@pglock/core/adapter`.
 *
 * @module @pglock/core
 */

export type {
  AdvisoryLocks,
  AdvisoryLocksOptions,
  SessionAdvisoryLocks,
} from './create-advisory-locks.ts';
export type { CurrentLeaderOptions, LeaderInfo } from './current-leader.ts';
export { deriveKey } from './derive-key.ts';
export {
  type LockAcquiredEvent,
  type LockEventBase,
  type LockLostEvent,
  type LockNotAcquiredEvent,
  type LockReleasedEvent,
  type LockRequestedEvent,
  lockChannels,
} from './diagnostics.ts';
export type { DurationString } from './duration.ts';
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
  LockQueryError,
  LockUsageError,
  TransactionRolledBackError,
} from './errors.ts';
export type { AdvisoryLockInfo } from './inspect-locks.ts';
export { JobTimedOutError, LockTableMissingError, ScheduleMismatchError } from './job-errors.ts';
export type { RetryPolicy } from './job-run.ts';
export type { JobSchedule } from './job-schedule.ts';
export { JOBS_TABLE, JOBS_TABLE_DDL, JOBS_TABLE_UPGRADE_DDL } from './jobs-table.ts';
export type { Election, LeaderCampaign, LeaderOptions } from './leader.ts';
export type { LeaderObserver, ObserveLeaderOptions } from './leader-observer.ts';
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
export { DEFAULT_MAX_KEYS, type LockOptions, type LockTarget } from './lock-options.ts';
export type { LockScope } from './lock-statements.ts';
export type {
  RunOnceContext,
  RunOnceCron,
  RunOnceOptions,
  RunOncePer,
  RunOncePeriod,
  RunOnceReason,
  RunOnceReasonOf,
  RunOnceResult,
  RunOnceRunOptions,
} from './run-once.ts';
export type { SessionConnection, SessionLock, SessionLockOptions } from './session-lock.ts';
export type { TryResult, WithLockOptions } from './transaction-lock.ts';
export type { IsolationLevel, PrismaIsolationLevel, TransactionSettings } from './transaction-settings.ts';
