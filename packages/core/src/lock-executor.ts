import type { Statement } from './statement.ts';

/**
 * The one thing an adapter implements: run a {@link Statement} on one connection (the transaction's,
 * or a pinned one) and return its rows as plain objects.
 *
 * @example
 * ```ts
 * import type { LockExecutor } from '@pglock/core';
 * import type pg from 'pg';
 *
 * function executorFor(client: pg.PoolClient): LockExecutor {
 *   return { query: async (s) => (await client.query(s.text, [...s.values])).rows };
 * }
 * ```
 */
export interface LockExecutor {
  /** Runs one statement on this executor's connection and resolves its rows. */
  query(statement: Statement): Promise<readonly Record<string, unknown>[]>;
  /**
   * Interrupts this connection's running statement from elsewhere (another pooled connection
   * running `pg_cancel_backend`, or a protocol CancelRequest). Needed for `signal`; without it an
   * aborted wait could not be stopped on the server, so `signal` is refused up front.
   */
  cancel?(backendPid: number | undefined): Promise<void>;
  /** When true, core reads `pg_backend_pid()` first (one more round trip) and passes it to `cancel`. */
  readonly cancelNeedsPid?: boolean;
}
