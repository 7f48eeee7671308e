import type pg from 'pg';

/**
 * Counts the statements that `pool`'s connections send: each new client's `query` is wrapped as the
 * pool opens it (its `'connect'` event), so call this before the pool is used. Every adapter on
 * node-postgres (pg, Drizzle, Kysely, Prisma's adapter-pg) sends through `client.query`.
 *
 * @example
 * ```ts
 * const pool = new pg.Pool({ connectionString: url, max: 4 });
 * const statements = countStatements(pool);
 * await pool.query('SELECT 1');
 * statements(); // 1
 * ```
 */
export function countStatements(pool: pg.Pool): () => number {
  let sent = 0;
  pool.on('connect', (client) => {
    const send = client.query.bind(client) as (...args: unknown[]) => unknown;
    Object.assign(client, {
      query(...args: unknown[]) {
        sent++;
        return send(...args);
      },
    });
  });
  return () => sent;
}
