import type { PortConnection, Row } from '../lock-port.ts';
import { sqlStateOf } from '../sql-state.ts';

/**
 * A postgres.js query as it runs. `state`, `active` and `canceller` are not postgres.js's public
 * API: they are read defensively, and a query without them is simply not cancellable.
 */
export type PostgresJsQuery = Promise<Row[]> & {
  readonly state?: { readonly pid?: number };
  readonly active?: boolean;
  readonly canceller?: (query: PostgresJsQuery) => Promise<void>;
};

/**
 * The slice of a postgres.js `sql` (or its `begin` / `reserve` scope) that pglock calls.
 *
 * @example
 * ```ts
 * import type { PostgresJsSql } from '@pglock/core/drivers/postgres-js';
 *
 * // `sql` of postgres.js (`postgres(url)`), or the scope of its `sql.begin(async (scope) => …)`.
 * const slice: PostgresJsSql = sql;
 * ```
 */
export interface PostgresJsSql {
  unsafe(text: string, values: readonly string[]): PostgresJsQuery;
}

const connections = new WeakMap<object, PortConnection & { readonly processID: number | undefined }>();

/**
 * The {@link PortConnection} of one postgres.js connection (a transaction's scope, or a `sql` of
 * one connection), made once per scope so its statements share what it learned. A wait is cancelled
 * with its query's canceller (a CancelRequest on a socket of its own); once the connection itself
 * failed nothing more is written to it (postgres.js would throw from a timer, porsager/postgres#1208).
 * `processID` is its cancel key's, known after its first statement.
 *
 * @example
 * ```ts
 * import { postgresJsConnection } from '@pglock/core/drivers/postgres-js';
 *
 * await sql.begin((scope) => run(postgresJsConnection(scope)));
 * ```
 */
export function postgresJsConnection(
  sql: PostgresJsSql,
): PortConnection & { readonly processID: number | undefined } {
  let connection = connections.get(sql);
  if (connection !== undefined) return connection;
  let running: PostgresJsQuery | undefined;
  let broken: unknown;
  connection = {
    async query(s) {
      if (broken !== undefined) throw broken;
      running = sql.unsafe(s.text, s.values);
      return running.catch((error: unknown) => {
        if (sqlStateOf(error) === undefined) broken = error;
        throw error;
      });
    },
    // The query's own canceller, awaited so that a late CancelRequest cannot reach a later statement
    // (its `cancel()` runs it once and drops the promise); on a settled query it would never settle.
    cancel: async () => (running?.active ? running.canceller?.(running) : undefined),
    reportsFailedCommit: true,
    get processID() {
      return running?.state?.pid;
    },
  };
  connections.set(sql, connection);
  return connection;
}

/** What a postgres.js module's default export makes: a `sql` that can also end. */
type PostgresJsFactory = (options: object) => PostgresJsSql & { end(options?: object): Promise<void> };

/** A connection opened by {@link openPostgresJs}, and how to end it (at once, never rejecting). */
export interface OpenedPostgresJs {
  readonly sql: PostgresJsSql;
  end(): Promise<void>;
}

/**
 * Opens one postgres.js connection of pglock's own with the settings of `source` (a `sql`), as
 * postgres.js's own `subscribe` does: one connection, without idle or lifetime end, no type fetch.
 * `postgres` is the module (`await import('postgres')`): core does not depend on postgres.js, the
 * adapter that accepts it does. `onClose` hears the connection close.
 *
 * @example
 * ```ts
 * import { openPostgresJs, postgresJsConnection } from '@pglock/core/drivers/postgres-js';
 *
 * const own = openPostgresJs(postgresModule, sql); // postgresModule: await import('postgres')
 * const control = { query: postgresJsConnection(own.sql).query, release: own.end };
 * ```
 */
export function openPostgresJs(
  postgres: unknown,
  source: { readonly options: object },
  onClose: () => void = () => undefined,
): OpenedPostgresJs {
  const module = postgres as PostgresJsFactory & { default?: PostgresJsFactory };
  const options = { ...source.options, max: 1, idle_timeout: null, max_lifetime: null, fetch_types: false };
  const sql = (module.default ?? module)({ ...options, no_subscribe: true, onclose: () => onClose() });
  // `timeout: 0` ends at once, without waiting for queries that will never settle.
  return { sql, end: () => sql.end({ timeout: 0 }).catch(() => undefined) };
}
