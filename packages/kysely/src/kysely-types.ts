import type { Kysely } from 'kysely';

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
 * Something Kysely's `sql` can run on: a `Kysely` instance, a transaction, or the connection of
 * `db.connection().execute(…)`.
 *
 * @example
 * ```ts
 * import type { KyselyExecutorLike } from '@pglock/kysely';
 *
 * const target: KyselyExecutorLike = db;
 * ```
 */
export type KyselyExecutorLike = Pick<Kysely<unknown>, 'getExecutor'>;

/** Isolation levels PostgreSQL has (Kysely's type also lists MSSQL's `snapshot`). */
export type IsolationLevel = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

/** Transaction access modes. */
export type AccessMode = 'read only' | 'read write';
