/**
 * pglock for adapter authors: the {@link LockPort} an adapter implements, and the factory that
 * builds every verb from it. Apps never need this entry; they import `@pglock/core` (or an adapter).
 *
 * @module @pglock/core/adapter
 */

export { onAbort } from './abort-listeners.ts';
export { backendAliveStatement, unlockAllStatement } from './backend-statements.ts';
export { batchLockError, batchLockRequest, batchLockStatement, sendBatchLock } from './batch-lock.ts';
export {
  type AdvisoryLocks,
  type AdvisoryLocksOptions,
  createAdvisoryLocks,
  lockVerbs,
  type SessionAdvisoryLocks,
  type VerbName,
  type VerbNames,
} from './create-advisory-locks.ts';
export { LockTrace, startTrace, type Trace } from './diagnostics.ts';
export { parseDuration } from './duration.ts';
export { type FailureWatch, failureWatch } from './failure-watch.ts';
export { inspectLocks, inspectLocksStatement, isLocked, lockTag, type QueryRunner } from './inspect-locks.ts';
export { type LentConnection, lentControl, lentPin } from './lent-connection.ts';
export { type LockFunctions, lockFunctions } from './lock-functions.ts';
export { checkDuration, type LockRequest, lockRequest, MAX_DURATION_MS } from './lock-options.ts';
export type {
  Cancellation,
  ControlConnection,
  LockPort,
  PinnedConnection,
  PortConnection,
  Row,
  TransactionRequest,
} from './lock-port.ts';
export {
  backendPidStatement,
  lockStatements,
  releaseStatements,
  sessionUnlockStatements,
  timedLockStatement,
  tryStatement,
} from './lock-statements.ts';
export { describeKeys } from './messages.ts';
export {
  claimNodePostgresClient,
  guardNodePostgresClient,
  isNodePostgresPool,
  type NodePostgresClient,
  type NodePostgresControlPool,
  type NodePostgresPool,
  type NodePostgresPoolClient,
  type NodePostgresStandaloneClient,
  nodePostgresConnection,
  nodePostgresControlPool,
  nodePostgresTransaction,
  nodePostgresTransactionOf,
  type OpenedNodePostgresClient,
  openNodePostgresClient,
  pinNodePostgresClient,
  queryNodePostgres,
} from './node-postgres-client.ts';
export {
  ADVISORY_LOCKS_OPTION_KEYS,
  checkOptionKeys,
  IS_LOCKED_OPTION_KEYS,
  LEADER_OPTION_KEYS,
  LOCK_OPTION_KEYS,
  type OptionKeysContext,
  RUN_ONCE_OPTION_KEYS,
  SESSION_LOCK_OPTION_KEYS,
  TRANSACTION_SETTING_KEYS,
  WITH_LOCK_OPTION_KEYS,
} from './option-keys.ts';
export { pinOwnConnection } from './own-connection.ts';
export {
  type OpenedPostgresJs,
  openPostgresJs,
  type PostgresJsQuery,
  type PostgresJsSql,
  postgresJsConnection,
} from './postgres-js-connection.ts';
export { refusedCommitError } from './refused-commit.ts';
export { cell } from './row-cell.ts';
export { within } from './run-cancellable.ts';
export { type CancelKey, sendCancelRequest } from './send-cancel-request.ts';
export { SqlState, sqlStateOf } from './sql-state.ts';
export { type StartBound, startBound } from './start-bound.ts';
export { type Statement, type StatementText, statement, statementText } from './statement.ts';
export {
  beginText,
  type CheckedTransactionSettings,
  checkTransactionSettings,
  prismaIsolationLevel,
  type TransactionSettingName,
} from './transaction-settings.ts';
export { commitStatement, rollbackStatement } from './transaction-statements.ts';
