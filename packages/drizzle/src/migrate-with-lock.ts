import { type BigintLockKey, InvalidLockOptionsError, LockUsageError, lockKey } from '@pglock/core';
import { lockVerbs } from '@pglock/core/adapter';
import { checkOptionKeys, lockRequest } from '@pglock/core/internal';
import { drizzleHandle, drizzlePort, ownClient } from './drizzle-port.ts';
import type { DrizzleRootDatabase } from './drizzle-types.ts';

/** The name of the migration lock: with {@link MIGRATION_LOCK_NAMESPACE}, it gives {@link MIGRATION_LOCK_KEY}. */
export const MIGRATION_LOCK_NAME = 'drizzle-migrations';
/** The namespace of the migration lock. */
export const MIGRATION_LOCK_NAMESPACE = 'pglock';
/**
 * The advisory lock every `migrateWithLock` takes, in every process and every version of this
 * package: `lockKey('drizzle-migrations', { namespace: 'pglock' })`, the bigint
 * `-1367691981684763460`. Other tools can take the same key to wait for migrations.
 *
 * @example
 * ```ts
 * import { MIGRATION_LOCK_KEY } from '@pglock/drizzle';
 *
 * console.log(MIGRATION_LOCK_KEY.value); // SELECT pg_advisory_lock(<this>) from psql waits for a deploy
 * ```
 */
export const MIGRATION_LOCK_KEY = lockKey(MIGRATION_LOCK_NAME, {
  namespace: MIGRATION_LOCK_NAMESPACE,
}) as BigintLockKey;

/**
 * Drizzle's `MigrationConfig`, plus how long to wait for another process's migration run.
 *
 * @example
 * ```ts
 * import type { MigrateWithLockConfig } from '@pglock/drizzle';
 *
 * const config: MigrateWithLockConfig = { migrationsFolder: './drizzle', timeoutMs: 60_000 };
 * ```
 */
export interface MigrateWithLockConfig {
  /** The drizzle-kit output folder. */
  readonly migrationsFolder: string;
  /** Drizzle's table of applied migrations (default `__drizzle_migrations`). */
  readonly migrationsTable?: string | undefined;
  /** Its schema (default `drizzle`). */
  readonly migrationsSchema?: string | undefined;
  /** How long to wait for another process's run to finish; default: without limit. */
  readonly timeoutMs?: number | undefined;
  /** Aborts the wait. */
  readonly signal?: AbortSignal | undefined;
}

const CONFIG_KEYS = ['migrationsFolder', 'migrationsTable', 'migrationsSchema', 'timeoutMs', 'signal'];

type Migrate = (db: unknown, config: object) => Promise<unknown>;
type Migrator = [{ drizzle: (config: { client: object }) => unknown }, { migrate: Migrate }];
// The migration lock's verbs: every message names migrateWithLock, the function the user called.
const verbs = lockVerbs(drizzlePort, undefined, { withSessionLock: 'migrateWithLock' });

/**
 * Runs Drizzle's migrator under a session advisory lock ({@link MIGRATION_LOCK_KEY}), so that
 * instances deploying at once apply each migration once: the first migrates, the others wait, then
 * find everything applied and return. Drizzle's own `migrate()` takes no lock
 * (drizzle-team/drizzle-orm#874). The lock is `withSessionLock`'s (a client checked out of a
 * `pg.Pool`, else a connection of its own); the migrator runs on one more connection, opened with
 * `db`'s settings once the lock is held, so that a pool of one cannot deadlock. Takes a database of
 * drizzle-orm/node-postgres or drizzle-orm/postgres-js, never a transaction (Drizzle's migrator
 * commits on its own) nor PGlite (one process owns it: call `migrate()` of `drizzle-orm/pglite/migrator`).
 *
 * @example
 * ```ts
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { migrateWithLock } from '@pglock/drizzle';
 *
 * const db = drizzle(process.env.DATABASE_URL!);
 * await migrateWithLock(db, { migrationsFolder: './drizzle' });
 * ```
 */
export async function migrateWithLock(db: DrizzleRootDatabase, config: MigrateWithLockConfig): Promise<void> {
  if (typeof config !== 'object' || config === null) {
    throw new InvalidLockOptionsError(
      "migrateWithLock: config must be an object with migrationsFolder, e.g. { migrationsFolder: './drizzle' }.",
    );
  }
  // Drizzle ignores a key it does not know: a misspelt migrationsTable would apply every migration again.
  checkOptionKeys(config, CONFIG_KEYS, 'migrateWithLock');
  const { timeoutMs, signal, ...migration } = config;
  if (typeof migration.migrationsFolder !== 'string' || migration.migrationsFolder === '') {
    throw new InvalidLockOptionsError(
      'migrateWithLock: migrationsFolder must be the drizzle-kit output folder.',
    );
  }
  // The wait's options are checked here, before the handle is (and before any SQL).
  lockRequest(MIGRATION_LOCK_KEY, { timeoutMs, signal }, undefined, 'migrateWithLock');
  const { driver, tx } = drizzleHandle(db, 'migrateWithLock');
  if (tx || driver === 'PgliteSession') {
    throw new LockUsageError(
      'migrateWithLock takes a Drizzle database of drizzle-orm/node-postgres or drizzle-orm/postgres-js, not a transaction. On PGlite, one process owns the database: call migrate() of drizzle-orm/pglite/migrator.',
    );
  }
  const run = async () => {
    const [{ drizzle }, { migrate }] = (await Promise.all(
      driver === 'PostgresJsSession'
        ? [import('drizzle-orm/postgres-js'), import('drizzle-orm/postgres-js/migrator')]
        : [import('drizzle-orm/node-postgres'), import('drizzle-orm/node-postgres/migrator')],
    )) as Migrator;
    const own = await ownClient(db, 'migrateWithLock');
    await migrate(drizzle({ client: own.via.client }), migration).finally(own.end);
  };
  await verbs(db).withSessionLock(MIGRATION_LOCK_KEY, run, { timeoutMs, signal });
}
