import type {
  NodePostgresClient,
  NodePostgresPool,
  NodePostgresPoolClient,
  NodePostgresStandaloneClient,
} from '@pglock/core/drivers/node-postgres';

// The slice of node-postgres that this adapter calls is core's (shared with Drizzle's node-postgres
// driver and Prisma's adapter-pg), typed by those members alone (as Kysely's `PostgresPool` is) so
// that apps on other pg 8.x minors, or pg-compatible pools, still compile.

/** What a statement resolves to, by the one member pglock reads. */
export interface PgQueryResultLike {
  readonly rows: readonly Record<string, unknown>[];
}

/** A connected client: `pg.Client`, or a `pg.PoolClient` checked out of a pool. */
export type PgClientLike = NodePostgresClient;

/**
 * A client that runs inside a transaction: what `lock`/`tryLock` take. A `pg.Pool` does not fit (its
 * statements each run on any connection, in autocommit, where a transaction lock ends at once).
 */
export type PgTransactionClient = PgClientLike & { readonly totalCount?: never };

/** A client checked out of a pool; `release(error)` destroys it instead of returning it. */
export type PgPoolClientLike = NodePostgresPoolClient;

/** A `pg.Pool`. */
export type PgPoolLike = NodePostgresPool;

/** A client of one's own: connected and ended by pglock (the control connection). */
export type PgStandaloneClient = NodePostgresStandaloneClient;

/** What the transaction-scoped functions accept: a pool (a client is checked out per call) or one client. */
export type PgQueryable = PgPoolLike | PgClientLike;

// Return types of a function with up to two overloads (pg.Pool's connect has a promise form and a callback form).
type Returns<F> = F extends { (...args: infer _A): infer R1; (...args: infer _B): infer R2 }
  ? R1 | R2
  : never;

/**
 * The client a callback receives: what the pool's `connect()` resolves (`pg.PoolClient` for a
 * `pg.Pool`), or the given client itself.
 */
export type ClientOf<D extends PgQueryable> = D extends { readonly totalCount: number; connect: infer F }
  ? Awaited<Extract<Returns<F>, PromiseLike<unknown>>>
  : D;
