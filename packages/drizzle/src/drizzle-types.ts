import type { SQLWrapper } from 'drizzle-orm';

/**
 * The slice of Drizzle that this adapter calls, typed by those members alone (as Kysely's
 * `PostgresPool` is) rather than by one driver's class: node-postgres (Pool or Client), postgres.js
 * and PGlite databases all match, and so do apps on other 0.45.x releases.
 */
export interface DrizzleExecutes {
  execute(query: SQLWrapper | string): PromiseLike<unknown>;
}

/**
 * Drizzle's transaction options (`PgTransactionConfig`), passed through to `db.transaction`. They
 * become SQL text in Drizzle, so pglock checks them against the fixed lists first.
 */
export interface DrizzleTransactionConfig {
  readonly isolationLevel?: 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';
  readonly accessMode?: 'read only' | 'read write';
  readonly deferrable?: boolean;
}

/**
 * A Drizzle PostgreSQL database, or a transaction (where `transaction` opens a savepoint): anything
 * with `execute` and `transaction`. `tx: unknown` accepts every driver's transaction class (a callback
 * taking `unknown` can be given any `tx`), while {@link TxOf} reads the real one, with the user's
 * schema, back from `DB`.
 */
export interface DrizzleDatabaseLike extends DrizzleExecutes {
  transaction<T>(fn: (tx: unknown) => Promise<T>, config?: DrizzleTransactionConfig): Promise<T>;
}

/**
 * A Drizzle transaction only: the `tx` of `db.transaction(async (tx) => …)`. `rollback()` exists on
 * `PgTransaction` and not on `PgDatabase`, so passing a top-level database (whose statements may
 * each run on a different pooled connection, outside any transaction) is a compile-time error.
 */
export interface DrizzleTransactionLike extends DrizzleExecutes {
  rollback(): never;
}

/**
 * The transaction type of `DB`: what its `transaction` callback receives (for example
 * `PgTransaction<NodePgQueryResultHKT, typeof schema, …>`, so `tx.query.users` keeps its types).
 *
 * @example
 * ```ts
 * import type { TxOf } from '@pglock/drizzle';
 *
 * type Tx = TxOf<typeof db>;
 * async function debit(tx: Tx, id: number) {
 *   await tx.update(accounts).set({ balance: 0 }).where(eq(accounts.id, id));
 * }
 * ```
 */
export type TxOf<DB extends DrizzleDatabaseLike> = Parameters<Parameters<DB['transaction']>[0]>[0];

/** A Drizzle database `migrateWithLock` can open a dedicated connection from: it has `$client`. */
export interface DrizzleMigratableDatabase extends DrizzleDatabaseLike {
  readonly $client: object;
}
