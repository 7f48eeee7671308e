import { Kysely, PostgresDialect } from 'kysely';
import { PostgresJSDialect } from 'kysely-postgres-js';
import pg from 'pg';
import postgres from 'postgres';

/** A Kysely instance on one of the dialects that reach a PostgreSQL server, for the non-conformance tests. */
export interface DialectCase {
  readonly name: string;
  open<DB = unknown>(url: string, max?: number): Kysely<DB>;
}

export const serverDialects: readonly DialectCase[] = [
  {
    name: 'PostgresDialect',
    open<DB>(url: string, max = 4) {
      const pool = new pg.Pool({ connectionString: url, max });
      // pg-pool leaves a checked-out client without an 'error' listener, so a backend terminated
      // while pinned would crash the process (node-postgres #1165/#2439); the heartbeat reports it.
      pool.on('connect', (client) => client.on('error', () => undefined));
      pool.on('error', () => undefined);
      return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    },
  },
  {
    name: 'postgres.js',
    open<DB>(url: string, max = 4) {
      return new Kysely<DB>({
        dialect: new PostgresJSDialect({ postgres: postgres(url, { max, onnotice: () => undefined }) }),
      });
    },
  },
];
