/**
 * The slice of node-postgres that this adapter calls, typed by those members alone (as Kysely's
 * `PostgresPool` does) so that apps on other pg 8.x minors, or pg-compatible pools, still compile.
 */
export interface PgQueryResultLike {
  readonly rows: readonly Record<string, unknown>[];
}

/** A connected client: `pg.Client`, or a `pg.PoolClient` checked out of a pool. */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  on(event: 'error', listener: (error: Error) => void): this;
  on(event: 'end', listener: () => void): this;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
  /** Used for protocol-level cancellation of a wait (node-postgres sets them after connecting). */
  readonly processID?: number | null;
  readonly secretKey?: number | null;
  readonly host?: string;
  readonly port?: number;
  /**
   * node-postgres's transaction status from the last ReadyForQuery: `'I'` idle, `'T'` in a
   * transaction, `'E'` in a failed one (pg 8.16+). Tells whether a client is inside your transaction.
   */
  getTransactionStatus?(): string | null;
  /** False while a statement's ReadyForQuery (which carries that status) has not arrived yet. */
  readonly readyForQuery?: boolean;
}

/**
 * A client that runs inside a transaction: what `lock`/`tryLock` take. A `pg.Pool` does not fit (its
 * statements each run on any connection, in autocommit, where a transaction lock ends at once).
 */
export type PgTransactionClient = PgClientLike & { readonly totalCount?: never };

/** A client checked out of a pool; `release(error)` destroys it instead of returning it. */
export interface PgPoolClientLike extends PgClientLike {
  release(destroy?: Error | boolean): void;
}

/** A `pg.Pool`. */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  readonly totalCount: number;
  /** The pool's settings; a control connection (cancel, pooler check) is opened with them, outside the pool. */
  readonly options?: object;
  /** The client class the pool creates (pg-pool keeps it), used for that control connection. */
  readonly Client?: new (
    config?: object,
  ) => PgStandaloneClient;
}

/** A client of one's own: connected and ended by pglock (the control connection). */
export interface PgStandaloneClient extends PgClientLike {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/** What the transaction-scoped functions accept: a pool (a client is checked out per call) or one client. */
export type PgQueryable = PgPoolLike | PgClientLike;

/** True for a pool; a client has no `totalCount`. */
export function isPool(db: PgQueryable): db is PgPoolLike {
  return (
    typeof (db as PgPoolLike).totalCount === 'number' && typeof (db as PgPoolLike).connect === 'function'
  );
}

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
