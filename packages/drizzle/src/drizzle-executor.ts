import {
  InvalidLockOptionsError,
  type LockExecutor,
  type LockRequest,
  type Statement,
  statement,
} from '@pglock/core';
import { type SQL, sql } from 'drizzle-orm';
import type { DrizzleExecutes } from './drizzle-types.ts';

/**
 * core's statement as Drizzle SQL: the text around the parameters stays raw, every value becomes a
 * bound parameter. Values are strings that the SQL casts (`$n::text::bigint`), so postgres.js, which
 * types parameters by what the server infers, and node-postgres send the same thing.
 */
export function toSql(s: Statement): SQL {
  return sql.join(
    s.fragments.flatMap((fragment, i) =>
      i < s.values.length ? [sql.raw(fragment), sql.param(s.values[i])] : [sql.raw(fragment)],
    ),
  );
}

/**
 * The rows of `execute`'s result, whatever the driver:
 * - node-postgres (Pool and Client): pg's `Result`, `{ rows, fields, rowCount, command, … }`;
 * - PGlite: `Results`, `{ rows, fields, affectedRows }`;
 * - postgres.js: a `RowList`, an array of rows (with `count`, `command`, … on it).
 */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result)) return result as Record<string, unknown>[];
  const rows = (result as { rows?: unknown } | null)?.rows;
  if (!Array.isArray(rows)) throw new Error('pglock: db.execute returned neither rows nor an array of rows.');
  return rows as Record<string, unknown>[];
}

/**
 * Runs core's statements through `handle` (a transaction, or a database for one-statement reads).
 * A wait is cancelled with `pg_cancel_backend` sent through `cancelVia`, the root database, which
 * runs it on another pooled connection; never through the transaction, whose connection is busy
 * waiting.
 */
export function drizzleExecutor(handle: DrizzleExecutes, cancelVia?: DrizzleExecutes): LockExecutor {
  const query = async (s: Statement) => rowsOf(await handle.execute(toSql(s)));
  if (cancelVia === undefined) return { query };
  return {
    query,
    cancelNeedsPid: true,
    async cancel(pid) {
      if (pid === undefined || !Number.isInteger(pid)) return;
      await cancelVia.execute(
        toSql(statement('SELECT pg_cancel_backend($1::text::int) AS ok', [String(pid)])),
      );
    },
  };
}

/**
 * `db` when it can run `pg_cancel_backend` on a second connection while one of its connections
 * waits: a database over a `pg.Pool` or a postgres.js `sql` with more than one connection. A
 * `pg.Client`, PGlite, a pool of one, or a transaction would queue the cancel behind the wait.
 */
export function cancelRoot(db: unknown): DrizzleExecutes | undefined {
  const client: unknown = (db as { $client?: unknown } | null)?.$client;
  if ((typeof client !== 'object' && typeof client !== 'function') || client === null) return undefined;
  const pool = client as { totalCount?: unknown; reserve?: unknown; options?: { max?: unknown } };
  const pgPool = typeof pool.totalCount === 'number';
  const postgresJs = typeof client === 'function' && typeof pool.reserve === 'function';
  if ((pgPool || postgresJs) && pool.options?.max !== 1) return db as DrizzleExecutes;
  return undefined;
}

/**
 * Refuses `signal` up front (before any SQL) where nothing could cancel a wait, with a message that
 * says what to do instead; core would refuse it too, but only after the transaction had begun.
 */
export function assertCancellable(request: LockRequest, root: DrizzleExecutes | undefined): void {
  if (request.signal === undefined || request.timeoutMs === 0 || root !== undefined) return;
  throw new InvalidLockOptionsError(
    'signal needs a second connection to cancel a server-side wait, and this Drizzle database has none ' +
      '(a pg.Client, PGlite, a pool of max 1, or a transaction). Use timeoutMs, or build the database over a pool; ' +
      'for lock(tx, …), call it through advisoryLocks(db).lock so the pool is known.',
  );
}
