import pg from 'pg';

/** A node-postgres Pool whose clients count every statement they send (for "no SQL before validation" and round trips). */
export interface CountingPool {
  readonly pool: pg.Pool;
  count(): number;
}

/**
 * Makes a real `pg.Pool` that counts the queries its clients send. Adapters built on node-postgres
 * (pg, Prisma's adapter-pg, Drizzle, Kysely) hand this pool to their ORM in the harness.
 */
export function countingPool(config: pg.PoolConfig): CountingPool {
  const pool = new pg.Pool(config);
  let count = 0;
  pool.on('connect', (client) => {
    // What the README tells apps to do: pg-pool leaves a checked-out client without an 'error'
    // listener, so a backend terminated while the harness's own code holds the client (its
    // `transaction()`) would crash the process (brianc/node-postgres #1165).
    client.on('error', () => undefined);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
  });
  // An idle client killed by the server (tests terminate backends) must not crash the process.
  pool.on('error', () => undefined);
  return { pool, count: () => count };
}
