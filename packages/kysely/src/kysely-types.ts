import type {
  AdvisoryLocks,
  AdvisoryLocksOptions,
  RunOnceOptions,
  SessionAdvisoryLocks,
  TransactionSettings,
  WithLockOptions,
} from '@pglock/core';
import type { Kysely, Transaction } from 'kysely';

/**
 * A Kysely transaction, typed by the members this adapter calls (Kysely's `sql` runs on anything
 * with `getExecutor()`), plus `isTransaction: true`. A plain `Kysely<DB>` has `isTransaction:
 * boolean` and so does not fit: taking a transaction-scoped lock outside a transaction, where it
 * would be released at once, is a compile error. Structural rather than `Transaction<DB>` so that a
 * transaction from a second copy of kysely in the tree is still accepted.
 *
 * @example
 * ```ts
 * import type { KyselyTransactionLike } from '@pglock/kysely';
 *
 * await db.transaction().execute(async (trx) => {
 *   const accepted: KyselyTransactionLike = trx;
 * });
 * ```
 */
export interface KyselyTransactionLike extends Pick<Kysely<unknown>, 'getExecutor'> {
  readonly isTransaction: true;
}

/**
 * The settings of the transaction `withLock` opens, passed to Kysely's transaction builder
 * (`setIsolationLevel`, `setAccessMode`); others are refused before any SQL.
 *
 * @example
 * ```ts
 * import type { KyselyTransactionSettings } from '@pglock/kysely';
 *
 * const settings: KyselyTransactionSettings = { isolationLevel: 'serializable', accessMode: 'read only' };
 * ```
 */
export type KyselyTransactionSettings = Pick<TransactionSettings, 'isolationLevel' | 'accessMode'>;

/**
 * Options of `withLock` / `tryWithLock`: core's, plus `transaction: { isolationLevel, accessMode }`.
 *
 * @example
 * ```ts
 * import type { KyselyWithLockOptions } from '@pglock/kysely';
 *
 * const options: KyselyWithLockOptions = { timeoutMs: 1_000, transaction: { isolationLevel: 'serializable' } };
 * ```
 */
export type KyselyWithLockOptions = WithLockOptions<KyselyTransactionSettings>;

/**
 * Options of `runOnce`: `per`, and `transaction: { isolationLevel, accessMode }` for the job's transaction.
 *
 * @example
 * ```ts
 * import type { KyselyRunOnceOptions } from '@pglock/kysely';
 *
 * const hourly: KyselyRunOnceOptions = { per: '1h', transaction: { isolationLevel: 'serializable' } };
 * ```
 */
export type KyselyRunOnceOptions = RunOnceOptions<KyselyTransactionSettings>;

/**
 * Defaults of `advisoryLocks(db, …)`, plus `control`: a second Kysely instance on the same database,
 * reached the same way (same URL, same pooler), over a small pool of its own. pglock then runs on it
 * what must not wait for a free connection of `db`: the cancel of a wait (`signal`), the pooler check
 * and the heartbeat of session locks, `isLocked` and `inspectLocks`.
 *
 * @example
 * ```ts
 * import type { KyselyAdvisoryLocksOptions } from '@pglock/kysely';
 * import { Kysely, PostgresDialect } from 'kysely';
 * import pg from 'pg';
 *
 * const control = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ max: 2 }) }) });
 * const options: KyselyAdvisoryLocksOptions = { namespace: 'shop', control };
 * ```
 */
export interface KyselyAdvisoryLocksOptions extends AdvisoryLocksOptions<KyselyTransactionSettings> {
  readonly control?: Kysely<unknown> | undefined;
}

/**
 * Every verb bound to one `Kysely` instance: callbacks get its `Transaction<DB>`, `lock`/`tryLock`
 * take a transaction only, session locks pin a connection with `db.connection()`.
 *
 * @example
 * ```ts
 * import type { KyselyAdvisoryLocks } from '@pglock/kysely';
 *
 * const locks: KyselyAdvisoryLocks<Database> = advisoryLocks(db);
 * ```
 */
export type KyselyAdvisoryLocks<DB> = AdvisoryLocks<
  Transaction<DB>,
  KyselyTransactionLike,
  KyselyTransactionSettings
> &
  SessionAdvisoryLocks;
