// The adapters a reliability run drives, each opened over a URL with its public API, the way an app
// opens it (packages/bench/src/subjects.ts does the same for the benchmark). Each ORM is imported
// inside its `open`, so a chaos worker process loads only its own (the drivers are small).
import type {
  LockTarget,
  RunOnceOptions,
  RunOncePeriod,
  RunOnceResult,
  SessionAdvisoryLocks,
  TryResult,
  WithLockOptions,
} from '@pglock/core';
import pg from 'pg';
import postgres from 'postgres';

/** SQL with `$1…$n` placeholders, run on whatever connection the subject bound it to. */
export type Sql = (text: string, values?: readonly unknown[]) => Promise<Record<string, unknown>[]>;

/** One adapter instance over its own pool, driven through its public API. */
export interface Subject {
  readonly name: SubjectName;
  /** The adapter's `withLock`, with SQL on the callback's transaction. */
  withLock<T>(target: LockTarget, fn: (sql: Sql) => Promise<T>, options?: WithLockOptions): Promise<T>;
  tryWithLock<T>(
    target: LockTarget,
    fn: (sql: Sql) => Promise<T>,
    options?: WithLockOptions,
  ): Promise<TryResult<T>>;
  /** The adapter's `runOnce` (Prisma: `$runOnce`), with SQL on the job's transaction. */
  runOnce<T>(
    name: string,
    options: RunOnceOptions,
    fn: (sql: Sql, period: RunOncePeriod) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
  /** SQL on the app's database outside any lock (autocommit, any pooled connection). */
  readonly query: Sql;
  /** The session verbs of the adapter's factory, where it can pin a connection. */
  readonly session: SessionAdvisoryLocks | undefined;
  /** The pool's counts, where the driver has them: what a `close()` that never settles waits for. */
  poolState(): string;
  close(): Promise<void>;
}

/** Hooks into postgres.js (its `debug` and `onclose` options), for the chaos worker's write watch. */
export interface PostgresJsHooks {
  debug(connection: number, query: string): void;
  onclose(connection: number): void;
}

/** How a subject is opened. */
export interface OpenOptions {
  /** Most connections of its pool (default 4). */
  readonly max?: number | undefined;
  /**
   * True behind a transaction-mode pooler: postgres.js then sends no named prepared statements, as
   * its README tells users of PgBouncer before 1.21.
   */
  readonly pooler?: boolean | undefined;
  readonly postgresJs?: PostgresJsHooks | undefined;
}

/** An adapter on one driver: its name, whether it has session locks, and how to open it. */
export interface SubjectDefinition {
  readonly name: SubjectName;
  readonly driver: 'node-postgres' | 'postgres.js';
  /** The adapter offers session locks on this driver (it can pin a connection). */
  readonly session: boolean;
  open(url: string, options?: OpenOptions): Promise<Subject>;
}

export type SubjectName =
  | 'pg'
  | 'drizzle-node-postgres'
  | 'drizzle-postgres-js'
  | 'kysely-pg'
  | 'kysely-postgres-js'
  | 'prisma';

const noop = (): void => undefined;

/**
 * A `pg.Pool` set up as the READMEs tell apps: an `'error'` listener on the pool (idle clients) and
 * on every client (pg-pool leaves a checked-out client without one, and the ORM, not pglock, checks
 * these out: brianc/node-postgres #1165).
 */
/** A node-postgres pool's counts: a client checked out and never released keeps `end()` from settling. */
const poolState = (pool: pg.Pool) => (): string =>
  `pg.Pool total ${pool.totalCount}, idle ${pool.idleCount}, waiting ${pool.waitingCount}`;
const noPoolState = (): string => 'no pool counts';

function appPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', noop);
  pool.on('connect', (client) => client.on('error', noop));
  return pool;
}

function postgresJs(url: string, options: OpenOptions) {
  return postgres(url, {
    max: options.max ?? 4,
    onnotice: noop,
    ...(options.pooler ? { prepare: false } : {}),
    ...(options.postgresJs
      ? {
          debug: (connection: number, query: string) => options.postgresJs?.debug(connection, query),
          onclose: (connection: number) => options.postgresJs?.onclose(connection),
        }
      : {}),
  });
}

/** `$n` placeholders as the fragments between them and the 0-based value index of each. */
function placeholders(text: string): { readonly fragments: string[]; readonly indexes: number[] } {
  const parts = text.split(/\$(\d+)/);
  return {
    fragments: parts.filter((_, i) => i % 2 === 0),
    indexes: parts.filter((_, i) => i % 2 === 1).map((n) => Number(n) - 1),
  };
}

/** node-postgres, with SQL on the client `withLock` checked out. */
const pgSubject: SubjectDefinition = {
  name: 'pg',
  driver: 'node-postgres',
  session: true,
  async open(url, options = {}) {
    const { advisoryLocks } = await import('@pglock/pg');
    const pool = appPool(url, options.max ?? 4);
    const locks = advisoryLocks(pool);
    const sqlOf =
      (client: pg.ClientBase | pg.Pool): Sql =>
      async (text, values = []) =>
        (await client.query(text, [...values])).rows;
    return {
      name: 'pg',
      withLock: (target, fn, o) => locks.withLock(target, (client) => fn(sqlOf(client)), o),
      tryWithLock: (target, fn, o) => locks.tryWithLock(target, (client) => fn(sqlOf(client)), o),
      runOnce: (name, o, fn) => locks.runOnce(name, o, (client, run) => fn(sqlOf(client), run.period)),
      query: sqlOf(pool),
      session: locks,
      poolState: poolState(pool),
      close: () => pool.end(),
    };
  },
};

/** Drizzle over `db.execute`, whose result is `{ rows }` on node-postgres and an array on postgres.js. */
async function drizzleSubject(
  name: SubjectName,
  db: import('drizzle-orm/pg-core').PgDatabase<import('drizzle-orm/pg-core').PgQueryResultHKT>,
  close: () => Promise<void>,
  state: () => string,
): Promise<Subject> {
  const [{ advisoryLocks }, { sql }] = await Promise.all([import('@pglock/drizzle'), import('drizzle-orm')]);
  const locks = advisoryLocks(db);
  const sqlOf =
    (handle: { execute(query: import('drizzle-orm').SQL): Promise<unknown> }): Sql =>
    async (text, values = []) => {
      const { fragments, indexes } = placeholders(text);
      const query = sql.join(
        fragments.flatMap((fragment, i) =>
          i < indexes.length
            ? [sql.raw(fragment), sql.param(values[indexes[i] as number])]
            : [sql.raw(fragment)],
        ),
      );
      const result = await handle.execute(query);
      return (
        Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows
      ) as Record<string, unknown>[];
    };
  return {
    name,
    withLock: (target, fn, o) => locks.withLock(target, (tx) => fn(sqlOf(tx)), o),
    tryWithLock: (target, fn, o) => locks.tryWithLock(target, (tx) => fn(sqlOf(tx)), o),
    runOnce: (n, o, fn) => locks.runOnce(n, o, (tx, run) => fn(sqlOf(tx), run.period)),
    query: sqlOf(db),
    session: locks as unknown as SessionAdvisoryLocks,
    poolState: state,
    close,
  };
}

const drizzleNodePostgres: SubjectDefinition = {
  name: 'drizzle-node-postgres',
  driver: 'node-postgres',
  session: true,
  async open(url, options = {}) {
    const { drizzle } = await import('drizzle-orm/node-postgres');
    const pool = appPool(url, options.max ?? 4);
    return drizzleSubject(
      'drizzle-node-postgres',
      drizzle({ client: pool }),
      () => pool.end(),
      poolState(pool),
    );
  },
};

const drizzlePostgresJs: SubjectDefinition = {
  name: 'drizzle-postgres-js',
  driver: 'postgres.js',
  session: true,
  async open(url, options = {}) {
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const client = postgresJs(url, options);
    return drizzleSubject(
      'drizzle-postgres-js',
      drizzle({ client }),
      () => client.end({ timeout: 5 }),
      noPoolState,
    );
  },
};

/** Kysely, with SQL through Kysely's `sql` (values bound as parameters). */
async function kyselySubject(
  name: SubjectName,
  db: import('kysely').Kysely<unknown>,
  state: () => string,
): Promise<Subject> {
  const [{ advisoryLocks }, { sql }] = await Promise.all([import('@pglock/kysely'), import('kysely')]);
  const locks = advisoryLocks(db);
  const sqlOf =
    (executor: import('kysely').Kysely<unknown>): Sql =>
    async (text, values = []) => {
      const { fragments, indexes } = placeholders(text);
      const parts = fragments.flatMap((fragment, i) =>
        i < indexes.length ? [sql.raw(fragment), sql.val(values[indexes[i] as number])] : [sql.raw(fragment)],
      );
      return [
        ...(await sql<Record<string, unknown>>`${sql.join(parts, sql.raw(''))}`.execute(executor)).rows,
      ];
    };
  return {
    name,
    withLock: (target, fn, o) => locks.withLock(target, (trx) => fn(sqlOf(trx)), o),
    tryWithLock: (target, fn, o) => locks.tryWithLock(target, (trx) => fn(sqlOf(trx)), o),
    runOnce: (n, o, fn) => locks.runOnce(n, o, (trx, run) => fn(sqlOf(trx), run.period)),
    query: sqlOf(db),
    session: locks as unknown as SessionAdvisoryLocks,
    poolState: state,
    close: () => db.destroy(),
  };
}

const kyselyPg: SubjectDefinition = {
  name: 'kysely-pg',
  driver: 'node-postgres',
  session: true,
  async open(url, options = {}) {
    const { Kysely, PostgresDialect } = await import('kysely');
    const pool = appPool(url, options.max ?? 4);
    return kyselySubject(
      'kysely-pg',
      new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) }),
      poolState(pool),
    );
  },
};

const kyselyPostgresJs: SubjectDefinition = {
  name: 'kysely-postgres-js',
  driver: 'postgres.js',
  session: true,
  async open(url, options = {}) {
    const [{ Kysely }, { PostgresJSDialect }] = await Promise.all([
      import('kysely'),
      import('kysely-postgres-js'),
    ]);
    const client = postgresJs(url, options);
    return kyselySubject(
      'kysely-postgres-js',
      new Kysely<unknown>({ dialect: new PostgresJSDialect({ postgres: client }) }),
      noPoolState,
    );
  },
};

/**
 * Prisma through its extension's `$withLock` on `@prisma/adapter-pg`. No session locks: Prisma pins
 * a connection only inside an interactive transaction, which cannot outlive its callback.
 */
const prismaSubject: SubjectDefinition = {
  name: 'prisma',
  driver: 'node-postgres',
  session: false,
  async open(url, options = {}) {
    const [{ advisoryLocks }, { PrismaPg }, { PrismaClient }] = await Promise.all([
      import('@pglock/prisma'),
      import('@prisma/adapter-pg'),
      import('./prisma/generated/client.ts'),
    ]);
    const pool = appPool(url, options.max ?? 4);
    const base = new PrismaClient({ adapter: new PrismaPg(pool) });
    const prisma = base.$extends(advisoryLocks());
    type Raw = { $queryRawUnsafe(text: string, ...values: unknown[]): Promise<unknown> };
    const sqlOf =
      (client: Raw): Sql =>
      async (text, values = []) =>
        (await client.$queryRawUnsafe(text, ...values)) as Record<string, unknown>[];
    return {
      name: 'prisma',
      withLock: (target, fn, o) => prisma.$withLock(target, (tx) => fn(sqlOf(tx)), o),
      tryWithLock: (target, fn, o) => prisma.$tryWithLock(target, (tx) => fn(sqlOf(tx)), o),
      runOnce: (name, o, fn) => prisma.$runOnce(name, o, (tx, run) => fn(sqlOf(tx), run.period)),
      query: sqlOf(prisma),
      session: undefined,
      poolState: poolState(pool),
      async close() {
        await base.$disconnect();
        await pool.end().catch(noop);
      },
    };
  },
};

/**
 * Every adapter and driver a reliability run mixes.
 *
 * @example
 * ```ts
 * for (const definition of subjects) {
 *   const subject = await definition.open(process.env.DATABASE_URL!);
 *   await subject.withLock('job', (sql) => sql('SELECT 1'));
 *   await subject.close();
 * }
 * ```
 */
export const subjects: readonly SubjectDefinition[] = [
  pgSubject,
  drizzleNodePostgres,
  drizzlePostgresJs,
  kyselyPg,
  kyselyPostgresJs,
  prismaSubject,
];

/**
 * The subject of that name (a chaos worker gets the name on its command line).
 *
 * @example
 * ```ts
 * const subject = await subjectNamed('kysely-postgres-js').open(url);
 * ```
 */
export function subjectNamed(name: string): SubjectDefinition {
  const found = subjects.find((definition) => definition.name === name);
  if (found === undefined)
    throw new Error(`no subject ${name}; one of ${subjects.map((s) => s.name).join(', ')}`);
  return found;
}
