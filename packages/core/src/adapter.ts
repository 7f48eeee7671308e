/**
 * pglock for adapter authors: the {@link LockPort} an adapter implements, the factory that builds
 * every verb from it, and the types either side names. Apps never need this entry; they import
 * `@pglock/core` (or an adapter). Driver helpers live in their own entries,
 * `@pglock/core/drivers/node-postgres` and `@pglock/core/drivers/postgres-js`, so an adapter loads
 * only the driver it runs on.
 *
 * @example
 * ```ts
 * import { createAdvisoryLocks, type LockPort } from '@pglock/core/adapter';
 *
 * declare const port: LockPort<MyDb, MyTx>;
 * export const locks = createAdvisoryLocks(port, { namespace: 'app' });
 * ```
 *
 * @module @pglock/core/adapter
 */

export {
  type AdvisoryLocks,
  type AdvisoryLocksOptions,
  createAdvisoryLocks,
  type LockFunctions,
  lockFunctions,
  lockVerbs,
  type SessionAdvisoryLocks,
  type VerbName,
  type VerbNames,
} from './create-advisory-locks.ts';

export type {
  Cancellation,
  ControlConnection,
  LockPort,
  PinnedConnection,
  PortConnection,
  Row,
  TransactionRequest,
} from './lock-port.ts';
export { saysConnectionEnded, sqlStateOf } from './sql-state.ts';
export type { Statement, StatementText } from './statement.ts';
export {
  beginText,
  type CheckedTransactionSettings,
  type TransactionSettingName,
} from './transaction-settings.ts';
