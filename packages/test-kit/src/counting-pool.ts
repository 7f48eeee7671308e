import pg from 'pg';

/** A node-postgres Pool whose clients count every statement they send (for "no SQL before validation" and round trips). */
export interface CountingPool {
  readonly pool: pg.Pool;
  count(): number;
}

/** Options of {@link countingPool} beyond the pool's own. */
export interface CountingPoolOptions {
  /**
   * `true` (default): listen for `'error'` on the pool and on every client, as the README tells apps
   * to. `false`: add no listener, so a test sees whether pglock's own listeners keep a terminated
   * backend from becoming an unhandled `'error'` event (which crashes the process).
   */
  readonly errorListeners?: boolean | undefined;
}

/**
 * Makes a real `pg.Pool` that counts the queries its clients send. Adapters built on node-postgres
 * (pg, Prisma's adapter-pg, Drizzle, Kysely) hand this pool to their ORM in the harness.
 *
 * @example
 * ```ts
 * import { countingPool } from '@pglock/test-kit';
 *
 * const { pool, count } = countingPool({ connectionString: url, max: 4 }, { errorListeners: false });
 * ```
 */
export function countingPool(config: pg.PoolConfig, options: CountingPoolOptions = {}): CountingPool {
  const listen = options.errorListeners ?? true;
  const pool = new pg.Pool(config);
  let count = 0;
  pool.on('connect', (client) => {
    // What the README tells apps to do: pg-pool leaves a checked-out client without an 'error'
    // listener, so a backend terminated while the harness's own code holds the client (its
    // `transaction()`) would crash the process (brianc/node-postgres #1165).
    if (listen) client.on('error', () => undefined);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
  });
  // An idle client killed by the server (tests terminate backends) must not crash the process.
  if (listen) pool.on('error', () => undefined);
  return { pool, count: () => count };
}
