import {
  AdvisoryLockError,
  acquireSessionLocks,
  assertNotAborted,
  InvalidLockOptionsError,
  type LockKey,
  lockKey,
  lockRequest,
  notAcquiredError,
  releaseSessionLocks,
} from '@pglock/core';
import { entityKind } from 'drizzle-orm';
import { assertCancellable, cancelRoot, drizzleExecutor } from './drizzle-executor.ts';
import type { DrizzleExecutes, DrizzleMigratableDatabase } from './drizzle-types.ts';

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
export const MIGRATION_LOCK_KEY: LockKey = lockKey(MIGRATION_LOCK_NAME, {
  namespace: MIGRATION_LOCK_NAMESPACE,
});

/** Drizzle's `MigrationConfig`, plus how long to wait for another process's migration run. */
export interface MigrateWithLockConfig {
  /** The drizzle-kit output folder (with `meta/_journal.json`). */
  readonly migrationsFolder: string;
  /** Drizzle's table of applied migrations (default `__drizzle_migrations`). */
  readonly migrationsTable?: string | undefined;
  /** Its schema (default `drizzle`). */
  readonly migrationsSchema?: string | undefined;
  /** How long to wait for another process's run to finish; default: without limit. */
  readonly timeoutMs?: number | undefined;
  /** Aborts the wait (needs a database over a pool, to cancel from a second connection). */
  readonly signal?: AbortSignal | undefined;
}

/** One connection of our own: the migrator runs there, under the session lock taken on it. */
interface Dedicated {
  readonly db: DrizzleExecutes;
  migrate(config: {
    migrationsFolder: string;
    migrationsTable?: string;
    migrationsSchema?: string;
  }): Promise<void>;
  /** Gives the connection back; with `broken`, closes it so the server drops the session and its lock. */
  close(broken?: unknown): Promise<void>;
}

/**
 * Runs Drizzle's migrator under a session advisory lock ({@link MIGRATION_LOCK_KEY}) on a dedicated
 * connection, so that instances deploying at once apply each migration once: the first migrates,
 * the others wait, then find everything applied and return. Drizzle's own `migrate()` takes no lock
 * (drizzle-team/drizzle-orm#874) and reads the applied migrations outside its transaction, on any
 * pooled connection.
 *
 * Takes your usual node-postgres or postgres.js database: over a `pg.Pool` a client is checked out;
 * over a `pg.Client` that client is used; over postgres.js a one-connection client is opened with
 * the same options and closed after. Never a transaction (Drizzle's migrator would commit it).
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
export async function migrateWithLock(
  db: DrizzleMigratableDatabase,
  config: MigrateWithLockConfig,
): Promise<void> {
  const { migrationsFolder, migrationsTable, migrationsSchema, timeoutMs, signal } = config ?? {};
  if (typeof migrationsFolder !== 'string' || migrationsFolder === '')
    throw new InvalidLockOptionsError('migrationsFolder must be the path of the drizzle-kit output folder.');
  const request = lockRequest(MIGRATION_LOCK_KEY, { timeoutMs, signal });
  const cancelVia = cancelRoot(db);
  assertCancellable(request, cancelVia);
  const open = dedicatedOpener(db);
  assertNotAborted(request);
  const connection = await open();
  const executor = drizzleExecutor(connection.db, cancelVia);
  let held: boolean;
  try {
    held = await acquireSessionLocks(executor, request);
  } catch (error) {
    await connection.close(error);
    throw error;
  }
  if (!held) {
    await connection.close();
    throw notAcquiredError(request);
  }
  let failed = false;
  let failure: unknown;
  try {
    await connection.migrate({
      migrationsFolder,
      ...(migrationsTable === undefined ? {} : { migrationsTable }),
      ...(migrationsSchema === undefined ? {} : { migrationsSchema }),
    });
  } catch (error) {
    failed = true;
    failure = error;
  }
  try {
    await releaseSessionLocks(executor, request);
  } catch (error) {
    await connection.close(error);
    throw failed ? failure : error;
  }
  await connection.close();
  if (failed) throw failure;
}

// Drizzle names its classes with a static entityKind; reading it needs no import of a driver
// module, so postgres.js users need not have pg installed and the other way round.
function driverOf(db: object): string | undefined {
  for (let ctor = db.constructor; typeof ctor === 'function'; ctor = Object.getPrototypeOf(ctor)) {
    const kind = (ctor as unknown as { [entityKind]?: unknown })[entityKind];
    if (kind === 'NodePgDatabase' || kind === 'PostgresJsDatabase') return kind;
  }
  return undefined;
}

function dedicatedOpener(db: DrizzleMigratableDatabase): () => Promise<Dedicated> {
  const driver = driverOf(db);
  if (driver === 'NodePgDatabase') return () => openNodePg(db.$client);
  if (driver === 'PostgresJsDatabase') return () => openPostgresJs(db.$client);
  throw new AdvisoryLockError(
    'LOCK_USAGE',
    'migrateWithLock takes a Drizzle database of drizzle-orm/node-postgres or drizzle-orm/postgres-js (not a transaction). ' +
      'On PGlite, one process owns the database: call migrate() from drizzle-orm/pglite/migrator directly.',
  );
}

interface PgClient {
  query(text: string): Promise<unknown>;
}
interface PgPool {
  readonly totalCount: number;
  connect(): Promise<PgClient & { release(destroy?: Error | boolean): void }>;
}

async function openNodePg(client: object): Promise<Dedicated> {
  const [{ drizzle }, { migrate }] = await Promise.all([
    import('drizzle-orm/node-postgres'),
    import('drizzle-orm/node-postgres/migrator'),
  ]);
  const pool = client as Partial<PgPool>;
  if (typeof pool.totalCount !== 'number' || typeof pool.connect !== 'function') {
    // A pg.Client is one connection already; it is the caller's, so it stays open.
    const db = drizzle({ client: client as never });
    return { db, migrate: (config) => migrate(db, config), close: async () => undefined };
  }
  const checkedOut = await pool.connect();
  const db = drizzle({ client: checkedOut as never });
  return {
    db,
    migrate: (config) => migrate(db, config),
    close: async (broken) => {
      // A client whose lock state is unknown is destroyed, never returned to the pool.
      checkedOut.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
    },
  };
}

async function openPostgresJs(client: object): Promise<Dedicated> {
  const [postgresModule, { drizzle }, { migrate }] = await Promise.all([
    import('postgres'),
    import('drizzle-orm/postgres-js'),
    import('drizzle-orm/postgres-js/migrator'),
  ]);
  // postgres.js accepts its own parsed options back (they carry `shared`); max 1 pins one connection.
  const options = (client as { options: Record<string, unknown> }).options;
  const postgres = (postgresModule as { default?: typeof postgresModule }).default ?? postgresModule;
  const sql = postgres({ ...options, max: 1 } as never);
  const db = drizzle({ client: sql });
  return {
    db,
    migrate: (config) => migrate(db, config),
    close: (broken) => sql.end({ timeout: broken === undefined ? 5 : 0 }),
  };
}
