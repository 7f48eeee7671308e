import { type Generated, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';

/** The shop's tables, as Kysely sees them. */
export interface Database {
  product: { id: number; name: string; stock: number };
  sale: { id: Generated<number>; product_id: number; seller: string };
}

/** A Kysely instance over a small pool. */
export function connect(url: string): Kysely<Database> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // A killed neighbour must not take this process down through an idle client's error.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
