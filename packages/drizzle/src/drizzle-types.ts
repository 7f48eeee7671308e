import type { TransactionSettings } from '@pglock/core';

/**
 * The transaction settings Drizzle's `db.transaction(fn, config)` applies (its `PgTransactionConfig`).
 *
 * @example
 * ```ts
 * import type { DrizzleTransactionSettings } from '@pglock/drizzle';
 *
 * const settings: DrizzleTransactionSettings = { isolationLevel: 'serializable', accessMode: 'read only' };
 * ```
 */
export type DrizzleTransactionSettings = Pick<
  TransactionSettings,
  'isolationLevel' | 'accessMode' | 'deferrable'
>;

/**
 * A Drizzle PostgreSQL database or transaction, typed by the one member pglock's types read (as
 * Kysely's `PostgresPool` is), so that every driver's class of drizzle-orm 0.44, 0.45 and 1.0 fits.
 * At run time pglock accepts the node-postgres, postgres.js and PGlite drivers.
 *
 * @example
 * ```ts
 * import type { DrizzleDatabaseLike } from '@pglock/drizzle';
 *
 * const handle: DrizzleDatabaseLike = drizzle({ client: pool });
 * ```
 */
export interface DrizzleDatabaseLike {
  transaction<T>(fn: (tx: unknown) => Promise<T>, config?: never): Promise<T>;
}

/**
 * A top-level Drizzle database (it has `$client`), not a transaction: what session locks and
 * `migrateWithLock` take, since they pin a connection of their own.
 *
 * @example
 * ```ts
 * import type { DrizzleRootDatabase } from '@pglock/drizzle';
 *
 * const db: DrizzleRootDatabase = drizzle({ client: new pg.Pool() });
 * ```
 */
export interface DrizzleRootDatabase extends DrizzleDatabaseLike {
  readonly $client: object;
}

/**
 * A Drizzle transaction only: the `tx` of `db.transaction(async (tx) => …)` (`PgTransaction` in 0.44
 * and 0.45, `PgAsyncTransaction` in 1.0). `rollback()` exists on a transaction and not on a database,
 * so passing a top-level database (each of whose statements may run on any pooled connection, in
 * autocommit) to `lock`/`tryLock` is a compile-time error.
 *
 * @example
 * ```ts
 * import { type DrizzleTransactionLike, lock } from '@pglock/drizzle';
 *
 * const debit = async (tx: DrizzleTransactionLike) => lock(tx, 'ledger');
 * ```
 */
export interface DrizzleTransactionLike extends DrizzleDatabaseLike {
  rollback(): never;
}

/**
 * The transaction type of `DB`: what its `transaction` callback receives, with the relational
 * queries of the `schema` (Drizzle 0.x) or `relations` (1.0) given to `drizzle()`, so `tx.query.users`
 * keeps its types. Type a helper's `tx` parameter with it.
 *
 * @example
 * ```ts
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import type { TxOf } from '@pglock/drizzle';
 *
 * const db = drizzle(process.env.DATABASE_URL!);
 * async function debit(tx: TxOf<typeof db>, id: number) {
 *   await tx.update(accounts).set({ balance: 0 }).where(eq(accounts.id, id));
 * }
 * ```
 */
export type TxOf<DB extends DrizzleDatabaseLike> = Parameters<Parameters<DB['transaction']>[0]>[0];
