import { lockKey } from '@pglock/core';
import { sqlStateOf } from '@pglock/core/adapter';
import type { PgQueryResultLike } from '@pglock/pg';
import { type LockName, type NameIndex, nameMatches } from './names.ts';

/** What the registry functions call: `pg.Pool`, `pg.Client` or a checked-out `pg.PoolClient`. */
export interface RegistryDb {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
}

/** The table `pglock locks` reads names from, in the connection's `search_path`. */
export const lockNamesTable = 'pglock_lock_names';

const createTable = `CREATE TABLE IF NOT EXISTS pglock_lock_names (
  key bigint PRIMARY KEY,
  name text NOT NULL,
  namespace text,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

// The names travel as one JSON parameter: never as SQL text, whatever characters they contain.
const upsert = `INSERT INTO pglock_lock_names (key, name, namespace)
  SELECT r.key::bigint, r.name, r.namespace FROM json_to_recordset($1::text::json) AS r(key text, name text, namespace text)
  ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, namespace = EXCLUDED.namespace, updated_at = now()`;

/**
 * Publishes lock names so that `pglock locks` can show them: creates the `pglock_lock_names` table
 * when missing and upserts one row per name (key, name, namespace). Opt-in, and meant for a
 * service's startup; names with a dynamic part (`account:${id}`) are better left out or published as
 * they are first used. Returns the number of names written. Throws `InvalidLockKeyError` for a bad
 * name before any SQL; names containing U+0000 cannot be stored in `text` and are rejected too.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { registerLockNames } from '@pglock/cli';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * await registerLockNames(pool, ['leaderboard', 'nightly-report'], { namespace: 'my-app' });
 * ```
 */
export async function registerLockNames(
  db: RegistryDb,
  names: readonly (string | LockName)[],
  options: { readonly namespace?: string | undefined } = {},
): Promise<number> {
  const rows = new Map<string, { key: string; name: string; namespace: string | null }>();
  for (const entry of names) {
    const { name, namespace = options.namespace } = typeof entry === 'string' ? { name: entry } : entry;
    const key = lockKey(name, { namespace });
    if (name.includes('\u0000')) {
      throw new TypeError(
        `Lock name ${JSON.stringify(name)} contains U+0000, which PostgreSQL text cannot hold.`,
      );
    }
    if (key.form === 'bigint')
      rows.set(String(key.value), { key: String(key.value), name, namespace: namespace ?? null });
  }
  if (rows.size === 0) return 0;
  await ensureTable(db);
  await db.query(upsert, [JSON.stringify([...rows.values()])]);
  return rows.size;
}

async function ensureTable(db: RegistryDb): Promise<void> {
  try {
    await db.query(createTable);
  } catch (error) {
    // Two services starting at once can both pass IF NOT EXISTS; the loser sees a duplicate type.
    if (sqlStateOf(error) !== '23505' && sqlStateOf(error) !== '42P07') throw error;
  }
}

/** Result of {@link readRegistry}: the names found, and why none could be read. */
export interface RegistryRead {
  readonly names: NameIndex;
  /** Set when the table exists but could not be read (for example no SELECT permission). */
  readonly warning?: string;
}

/**
 * Reads the registry's names for `keys` (decimal bigint text). A missing table is not an error (the
 * registry is opt-in); rows whose key is not the hash of their name are ignored.
 *
 * @example
 * ```ts
 * import { readRegistry } from '@pglock/cli';
 *
 * const { names } = await readRegistry(pool, ['7676066025365312217']);
 * ```
 */
export async function readRegistry(db: RegistryDb, keys: readonly string[]): Promise<RegistryRead> {
  const names: NameIndex = new Map();
  if (keys.length === 0) return { names };
  const { rows: present } = await db.query("SELECT to_regclass('pglock_lock_names') IS NOT NULL AS present");
  if (present[0]?.present !== true) return { names };
  let rows: readonly Record<string, unknown>[];
  try {
    ({ rows } = await db.query(
      'SELECT key::text AS key, name, namespace FROM pglock_lock_names WHERE key = ANY($1::text::bigint[])',
      [`{${keys.join(',')}}`],
    ));
  } catch (error) {
    return { names, warning: `could not read ${lockNamesTable}: ${(error as Error).message}` };
  }
  for (const row of rows) {
    const entry = {
      name: String(row.name),
      namespace: row.namespace === null ? undefined : String(row.namespace),
    };
    if (nameMatches(BigInt(String(row.key)), entry))
      names.set(String(row.key), { ...entry, source: 'registry' });
  }
  return { names };
}
