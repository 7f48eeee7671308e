import pg from 'pg';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

/** The database the run measures, and how to let go of it. */
export interface BenchDatabase {
  readonly url: string;
  /** "PostgreSQL 18.1 (embedded)" or the server's version for DATABASE_URL. */
  readonly label: string;
  close(): Promise<void>;
}

/** Rows every scenario touches: one counter per loop (uncontended) and the hot row, and a lock table. */
export const WORK_ROWS = 64;
export const HOT_ROW = 0;
/** The one advisory-lock key of the hot-key scenario ('plock' in ASCII). */
export const HOT_KEY = 0x706c6f636bn;

/**
 * `DATABASE_URL` when set, else an embedded PostgreSQL started for the run (stopped by `close`).
 * Creates the benchmark's tables either way.
 *
 * @example
 * ```ts
 * const db = await openDatabase();
 * try { console.log(db.label); } finally { await db.close(); }
 * ```
 */
export async function openDatabase(): Promise<BenchDatabase> {
  const external = process.env.DATABASE_URL;
  const server = external ? { url: external, stop: async () => undefined } : await startEmbeddedPostgres();
  try {
    const version = await createTables(server.url);
    return {
      url: withoutCommitFlush(server.url),
      label: `PostgreSQL ${version} (${external ? 'DATABASE_URL' : 'embedded'})`,
      close: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** Creates the benchmark's tables afresh and returns the server's version. */
async function createTables(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`
      DROP TABLE IF EXISTS bench_counter, bench_lock;
      CREATE TABLE bench_counter (id int PRIMARY KEY, n int NOT NULL);
      INSERT INTO bench_counter SELECT g, 0 FROM generate_series(0, ${WORK_ROWS}) AS g;
      CREATE TABLE bench_lock (name text PRIMARY KEY);
      INSERT INTO bench_lock SELECT 'row-' || g FROM generate_series(0, ${WORK_ROWS}) AS g;
    `);
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return rows[0]?.v ?? '?';
  } finally {
    await client.end();
  }
}

/**
 * The URL with `synchronous_commit=off` for the benchmark's sessions only (a startup option; nothing
 * in the database changes). With it, COMMIT does not wait for the WAL flush, whose disk latency would
 * otherwise dominate and blur every figure; every design and pgbench (PGOPTIONS) run with it alike.
 */
export function withoutCommitFlush(url: string): string {
  // Spelled with %20, not URLSearchParams' `+`: libpq (pgbench) decodes only percent escapes.
  const parsed = new URL(url);
  parsed.searchParams.delete('options');
  const rest = parsed.searchParams.toString();
  parsed.search = `?${rest ? `${rest}&` : ''}options=${encodeURIComponent('-c synchronous_commit=off')}`;
  return parsed.toString();
}

/** The work every locked section does: one counter increment. */
export const WORK_SQL = 'UPDATE bench_counter SET n = n + 1 WHERE id = $1';
