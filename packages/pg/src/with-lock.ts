import {
  type AdvisoryLockInfo,
  inspectLocks as coreInspectLocks,
  isLocked as coreIsLocked,
  type LockKeyInput,
  type LockOptions,
  type LockTarget,
  lockInTransaction,
  lockKey,
  lockRequest,
  runTryWithLock,
  runWithLock,
  type TryResult,
  tryLockInTransaction,
} from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import { type ClientOf, isPool, type PgClientLike, type PgQueryable } from './pg-types.ts';
import { beginStatement, type IsolationLevel, pgTransactionDriver } from './transaction-driver.ts';

/** Options of the node-postgres adapter: core's, plus the isolation level of `withLock`'s transaction. */
export interface PgLockOptions extends LockOptions {
  readonly isolationLevel?: IsolationLevel | undefined;
}

/**
 * Runs `fn` in a new transaction on one pinned client whose first statement takes the
 * transaction-scoped lock; COMMIT (or ROLLBACK when `fn` throws) releases it. Throws
 * `LockNotAcquiredError` when not acquired within `timeoutMs`.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { withLock } from '@pglock/pg';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * await withLock(pool, 'leaderboard', async (client) => {
 *   await client.query('REFRESH MATERIALIZED VIEW leaderboard');
 * });
 * ```
 */
export async function withLock<D extends PgQueryable, T>(
  db: D,
  target: LockTarget,
  fn: (client: ClientOf<D>) => Promise<T>,
  options: PgLockOptions = {},
): Promise<T> {
  const request = lockRequest(target, options);
  return runWithLock(pgTransactionDriver(db, beginStatement(options.isolationLevel)), request, (client) =>
    fn(client as ClientOf<D>),
  );
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken. `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/pg';
 *
 * const result = await tryWithLock(pool, 'nightly-job', async (client) => runJob(client));
 * if (!result.acquired) console.log('another instance runs it');
 * ```
 */
export async function tryWithLock<D extends PgQueryable, T>(
  db: D,
  target: LockTarget,
  fn: (client: ClientOf<D>) => Promise<T>,
  options: PgLockOptions = {},
): Promise<TryResult<T>> {
  const request = lockRequest(target, options, { timeoutMs: 0 });
  return runTryWithLock(pgTransactionDriver(db, beginStatement(options.isolationLevel)), request, (client) =>
    fn(client as ClientOf<D>),
  );
}

/**
 * Takes a transaction-scoped lock inside a transaction the caller opened on `client`; it is held
 * until that transaction ends. Throws `LockNotAcquiredError` when not acquired within `timeoutMs`
 * (the transaction is then failed and must be rolled back).
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/pg';
 *
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await lock(client, ['account:1', 'account:2']);
 * // … transfer …
 * await client.query('COMMIT');
 * client.release();
 * ```
 */
export async function lock(
  client: PgClientLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<void> {
  await lockInTransaction(pgExecutor(client), lockRequest(target, options));
}

/**
 * Tries a transaction-scoped lock inside the caller's transaction: `true` when held (until the
 * transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/pg';
 *
 * if (await tryLock(client, 'report')) await buildReport(client);
 * ```
 */
export async function tryLock(
  client: PgClientLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<boolean> {
  return tryLockInTransaction(pgExecutor(client), lockRequest(target, options, { timeoutMs: 0 }));
}

/**
 * True when any session holds `key`. A snapshot, for dashboards and tests, not for deciding
 * whether to take a lock (use {@link tryWithLock} for that).
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/pg';
 *
 * console.log(await isLocked(pool, 'nightly-job'));
 * ```
 */
export async function isLocked(
  db: PgQueryable,
  key: LockKeyInput,
  options: Pick<LockOptions, 'namespace'> = {},
): Promise<boolean> {
  const resolved = lockKey(key, options);
  return coreIsLocked(pgExecutor(queryTarget(db)), resolved);
}

/**
 * Every advisory lock in the current database with holders and waiters (`pg_locks` joined with
 * `pg_stat_activity`).
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/pg';
 *
 * console.table(await inspectLocks(pool));
 * ```
 */
export async function inspectLocks(db: PgQueryable): Promise<AdvisoryLockInfo[]> {
  return coreInspectLocks(pgExecutor(queryTarget(db)));
}

// A pool's own query() checks a client out for one statement, which is all inspection needs.
function queryTarget(db: PgQueryable): PgClientLike {
  if (!isPool(db)) return db;
  const query = (text: string, values?: unknown[]) => db.query(text, values);
  return { query, on: () => undefined, removeListener: () => undefined };
}
