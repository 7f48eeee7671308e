import type * as core from '@pglock/core';

// postgres.js is typed here by the members pglock calls (as Kysely's `PostgresPool` is), so that apps
// on another 3.x release, or with a second copy of its types in the tree, still compile. The
// callbacks get the app's own types: `TxOf` reads them off its `sql.begin`.

/** postgres.js's `unsafe`, by what pglock passes it: its text, and its values as strings. */
export interface PostgresUnsafe {
  unsafe(query: string, parameters: string[]): PromiseLike<unknown>;
}

/**
 * A postgres.js `sql` (what `postgres(url)` returns): `begin` for the transactions `withLock` opens,
 * `options` for the connections of pglock's own (a session lock's, the pooler check's), with the same
 * settings. A reserved connection (`await sql.reserve()`) does not fit: it has no `begin` at run time.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import type { PostgresSqlLike } from '@pglock/postgres';
 *
 * const sql: PostgresSqlLike = postgres(process.env.DATABASE_URL!);
 * ```
 */
export interface PostgresSqlLike extends PostgresUnsafe {
  begin<T>(options: string, fn: (tx: PostgresTransactionLike) => T | Promise<T>): Promise<unknown>;
  readonly options: object;
  readonly release?: never;
}

/**
 * A postgres.js transaction only: the `tx` of `sql.begin(async (tx) => …)` (or of `tx.savepoint`).
 * It has `savepoint` and no `begin`, so passing `sql` itself (whose statements each run on any pooled
 * connection, in autocommit, where a transaction lock ends at once) to `lock`/`tryLock` is a
 * compile-time error.
 *
 * @example
 * ```ts
 * import { lock, type PostgresTransactionLike } from '@pglock/postgres';
 *
 * const debit = async (tx: PostgresTransactionLike) => lock(tx, 'ledger');
 * ```
 */
export interface PostgresTransactionLike extends PostgresUnsafe {
  savepoint<T>(fn: (tx: PostgresTransactionLike) => T | Promise<T>): Promise<unknown>;
  readonly begin?: never;
}

/** What the transaction-scoped verbs take: `sql` (a transaction per call) or a transaction to nest in. */
export type PostgresQueryable = PostgresSqlLike | PostgresTransactionLike;

/**
 * What a callback of `S` gets: postgres.js's `TransactionSql` of `sql.begin` (custom types included),
 * or the transaction itself when given one. Type a helper's `tx` parameter with it.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import type { TxOf } from '@pglock/postgres';
 *
 * const sql = postgres(process.env.DATABASE_URL!);
 * async function debit(tx: TxOf<typeof sql>, id: number) {
 *   await tx`UPDATE accounts SET balance = balance - 1 WHERE id = ${id}`;
 * }
 * ```
 */
export type TxOf<S> = S extends { begin(options: string, fn: (tx: infer Tx) => never): unknown } ? Tx : S;

/**
 * The transaction settings `sql.begin(options, fn)` applies (`BEGIN ISOLATION LEVEL … READ ONLY …`).
 *
 * @example
 * ```ts
 * import type { PostgresTransactionSettings } from '@pglock/postgres';
 *
 * const settings: PostgresTransactionSettings = { isolationLevel: 'serializable', accessMode: 'read only' };
 * ```
 */
export type PostgresTransactionSettings = Pick<
  core.TransactionSettings,
  'isolationLevel' | 'accessMode' | 'deferrable'
>;

/**
 * Options of `withLock` / `tryWithLock`: core's, plus `transaction: { isolationLevel, accessMode,
 * deferrable }`.
 *
 * @example
 * ```ts
 * import type { PostgresWithLockOptions } from '@pglock/postgres';
 *
 * const options: PostgresWithLockOptions = { timeoutMs: 1_000, transaction: { isolationLevel: 'serializable' } };
 * ```
 */
export type PostgresWithLockOptions = core.WithLockOptions<PostgresTransactionSettings>;

/**
 * Every verb bound to one `sql` (or one transaction): callbacks get `Tx`, `lock`/`tryLock` take a
 * transaction only, session verbs open a connection of their own with the settings of `sql`.
 *
 * @example
 * ```ts
 * import type { PostgresAdvisoryLocks, TxOf } from '@pglock/postgres';
 *
 * let locks: PostgresAdvisoryLocks<TxOf<typeof sql>>;
 * ```
 */
export type PostgresAdvisoryLocks<Tx> = core.AdvisoryLocks<
  Tx,
  PostgresTransactionLike,
  PostgresTransactionSettings
> &
  core.SessionAdvisoryLocks;
