import { PGlite } from '@electric-sql/pglite';
import * as adapter from '@pglock/kysely';
import {
  type Capabilities,
  countingPool,
  defineHarness,
  type HarnessSetup,
  type Sql,
} from '@pglock/test-kit';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { PostgresJSDialect } from 'kysely-postgres-js';
import postgres from 'postgres';
import { advisoryLocks, type KyselyAdvisoryLocksOptions } from '../src/index.ts';

/** The package as apps import it, for the kit's verbs and exports suites. */
const adapterPackage = {
  name: '@pglock/kysely',
  exports: adapter,
  readme: new URL('../README.md', import.meta.url),
};

/** The test-kit's `Sql` (text with `$1…$n`) through Kysely's `sql`, values bound as parameters. */
export const sqlOf =
  (target: Kysely<unknown>): Sql =>
  async (text, values = []) => {
    const fragments = text.split(/\$\d+/) as unknown as TemplateStringsArray;
    return [...(await sql<Record<string, unknown>>(fragments, ...values).execute(target)).rows];
  };

const capabilities = {
  contention: true,
  multiProcess: true,
  abort: true,
  countsStatements: true,
  session: true,
  transactionSettings: ['isolationLevel', 'accessMode'],
} as const;

/** Opens a `Kysely` over one driver for `url`, with at most `max` connections, and counts its statements. */
export type Open = (
  url: string,
  max: number,
) => {
  readonly db: Kysely<unknown>;
  count(): number;
  close(): Promise<void>;
  readonly sql?: typeof sqlOf;
  /** postgres.js: how many of its connections closed so far (its `onclose`). */
  readonly closes?: () => number;
};

/** What every Kysely harness hands the kit: the adapter over `db`, with `defaults` of its own (`control`). */
function setupOver(
  { db, count, sql = sqlOf }: ReturnType<Open>,
  close: () => Promise<void>,
  own: KyselyAdvisoryLocksOptions = {},
): HarnessSetup<Transaction<unknown>> {
  return {
    db,
    // A null (or other non-object) default goes to the adapter as given: the misuse suite checks it.
    advisoryLocks: (defaults) =>
      advisoryLocks(
        db,
        defaults === undefined
          ? own
          : defaults === null || typeof defaults !== 'object'
            ? defaults
            : { ...own, ...defaults },
      ),
    locksOn: (trx) => advisoryLocks(trx),
    sql,
    transaction: (fn) => db.transaction().execute(fn),
    statementCount: count,
    close,
  };
}

/** The control instance's pool: two connections, as the README advises. */
const CONTROL_POOL = 2;

/**
 * A harness over one driver. `control: true` gives the factory a second instance on the same URL (a
 * pool of two of its own) for cancels, pooler checks and heartbeats, as the README advises where a
 * pool may be exhausted by waiters or has a single connection.
 */
function kyselyHarness(
  name: string,
  exportName: string,
  open: Open,
  control: boolean,
  own: Partial<Capabilities> = {},
) {
  return defineHarness<Transaction<unknown>>({
    name,
    capabilities: { ...capabilities, ...(control ? { sideConnections: CONTROL_POOL } : {}), ...own },
    package: adapterPackage,
    moduleUrl: import.meta.url,
    exportName,
    async open(url, { max }) {
      const opened = open(url, max);
      if (!control) return setupOver(opened, opened.close);
      const other = open(url, CONTROL_POOL);
      const close = async () => {
        await opened.close();
        await other.close();
      };
      return setupOver(opened, close, { control: other.db });
    },
  });
}

// Kysely's PostgresDialect gives pglock no access to its pg clients, so the listener the README asks
// for is always there: a terminated backend would otherwise be an unhandled 'error' event.
export const pgDialect: Open = (url, max) => {
  const { pool, count } = countingPool({ connectionString: url, max });
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  return { db, count, close: () => db.destroy() };
};

/**
 * Kysely's driver writes ROLLBACK to a postgres.js connection whose backend was terminated: postgres.js
 * 3.4.9 throws from a timer and leaves that transaction pending (porsager/postgres#1208, unpatched here).
 */
const onPostgresJs: Partial<Capabilities> = { survivesTerminatedTransaction: false };

export const postgresJs =
  (options: postgres.Options<Record<string, postgres.PostgresType>>): Open =>
  (url, max) => {
    let count = 0;
    let closes = 0;
    const client = postgres(url, {
      ...options,
      max,
      onnotice: () => undefined,
      debug: () => void count++,
      onclose: () => void closes++,
    });
    const db = new Kysely<unknown>({ dialect: new PostgresJSDialect({ postgres: client }) });
    // Kysely's destroy() is sql.end() without a timeout, which never settles once a backend was
    // terminated under a running query (postgres.js keeps that query as in flight): end with one.
    const close = async () => {
      await client.end({ timeout: 1 });
      await db.destroy();
    };
    // The kit's own SQL reads its columns by their names, which a column transform renamed.
    const sql = options.transform === undefined ? sqlOf : unCamel;
    return { db, count: () => count, close, sql, closes: () => closes };
  };

/** {@link sqlOf} with column names back in snake_case (undoes `transform: postgres.camel`). */
const unCamel =
  (target: Kysely<unknown>): Sql =>
  async (text, values) =>
    (await sqlOf(target)(text, values)).map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]),
      ),
    );

/** `@pglock/kysely` over Kysely's own `PostgresDialect` and a counting `pg.Pool`, `db` alone. */
export const postgresDialectHarness = kyselyHarness(
  'kysely (PostgresDialect)',
  'postgresDialectHarness',
  pgDialect,
  false,
);

/** The same with a control instance. */
export const postgresDialectControlHarness = kyselyHarness(
  'kysely (PostgresDialect, control)',
  'postgresDialectControlHarness',
  pgDialect,
  true,
);

/** `@pglock/kysely` over `kysely-postgres-js` (postgres.js), with a control instance; counted with `debug`. */
export const postgresJsHarness = kyselyHarness(
  'kysely (postgres.js, control)',
  'postgresJsHarness',
  postgresJs({}),
  true,
  onPostgresJs,
);

/** The same without a control instance. */
export const postgresJsAloneHarness = kyselyHarness(
  'kysely (postgres.js)',
  'postgresJsAloneHarness',
  postgresJs({}),
  false,
  onPostgresJs,
);

/** postgres.js with `transform: postgres.camel`: it renames every result column (issue 12 D15). */
export const postgresJsCamelHarness = kyselyHarness(
  'kysely (postgres.js, transform: camel, control)',
  'postgresJsCamelHarness',
  postgresJs({ transform: postgres.camel }),
  true,
  onPostgresJs,
);

// One in-memory PGlite per process, started on first use: starting one takes seconds, and with
// one connection and no contention suites, separate instances would test nothing more.
let shared: Promise<{ pglite: PGlite; count: () => number }> | undefined;
function sharedPglite(): Promise<{ pglite: PGlite; count: () => number }> {
  shared ??= PGlite.create().then((pglite) => {
    let count = 0;
    const query = pglite.query.bind(pglite);
    pglite.query = ((...args: Parameters<typeof query>) => {
      count++;
      return query(...args);
    }) as typeof pglite.query;
    return { pglite, count: () => count };
  });
  return shared;
}

/**
 * `@pglock/kysely` over `kysely-pglite-dialect`: PostgreSQL in this process, one connection, so
 * nothing can contend, no child process can reach it, and a session lock has no second connection
 * for its checks. The URL is not used; instances share one in-memory database.
 */
export const pgliteHarness = defineHarness<Transaction<unknown>>({
  name: 'kysely (PGlite)',
  capabilities: {
    contention: false,
    multiProcess: false,
    abort: false,
    countsStatements: true,
    session: false,
  },
  moduleUrl: import.meta.url,
  exportName: 'pgliteHarness',
  async open() {
    const { pglite, count } = await sharedPglite();
    const db = new Kysely<unknown>({ dialect: new PGliteDialect(pglite) });
    return setupOver({ db, count, close: async () => undefined }, async () => undefined);
  },
});
