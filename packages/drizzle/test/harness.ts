import { PGlite } from '@electric-sql/pglite';
import * as adapter from '@pglock/drizzle';
import { type Capabilities, countingPool, defineHarness, type Sql } from '@pglock/test-kit';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { advisoryLocks, type DrizzleDatabaseLike } from '../src/index.ts';

/** The package as apps import it, for the kit's verbs and exports suites. */
const adapterPackage = {
  name: '@pglock/drizzle',
  exports: adapter,
  readme: new URL('../README.md', import.meta.url),
};

/** Test SQL with `$n` placeholders as Drizzle SQL (the suites' statements), sent the way an app would. */
export function rawSql(text: string, values: readonly unknown[] = []): SQL {
  const parts = text.split(/\$(\d+)/);
  return sql.join(
    parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql.param(values[Number(part) - 1]))),
  );
}

/** `execute`'s rows: node-postgres and PGlite give `{ rows }`, postgres.js an array. */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  return (Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows) as Record<
    string,
    unknown
  >[];
}

interface Executes {
  execute(query: SQL): PromiseLike<unknown>;
}
type AnyDb = DrizzleDatabaseLike & Executes;

/** Runs a suite statement through Drizzle's `execute` on `handle` (a database or a transaction). */
export const sqlOf =
  (handle: unknown, keys: (row: Record<string, unknown>) => Record<string, unknown> = (row) => row): Sql =>
  async (text, values = []) =>
    rowsOf(await (handle as Executes).execute(rawSql(text, values))).map(keys);

const network: Capabilities = {
  contention: true,
  multiProcess: true,
  abort: true,
  countsStatements: true,
  session: true,
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
};
/** Session locks over a `pg.Client` or postgres.js open a connection of their own. */
const ownSessions: Capabilities = { ...network, sessionConnection: 'own' };
/**
 * postgres.js: `sql.begin` rolls back on any failed statement, also inside pglock's savepoint; and its
 * ROLLBACK on a connection whose backend was terminated throws from postgres.js 3.4.9's write timer
 * (porsager/postgres#1208, unpatched here).
 */
const postgresJsCapabilities: Capabilities = {
  ...ownSessions,
  nestedFailureRecovers: false,
  survivesTerminatedTransaction: false,
};

/** The few ORM-specific calls, the same for every driver: the ORM's own `db.transaction` and `tx`. */
function setup(
  db: AnyDb,
  count: () => number,
  close: () => Promise<unknown>,
  keys?: (row: Record<string, unknown>) => Record<string, unknown>,
) {
  return {
    db,
    advisoryLocks: (defaults?: Parameters<typeof advisoryLocks>[1]) => advisoryLocks(db, defaults),
    locksOn: (tx: unknown) => advisoryLocks(tx as AnyDb),
    sql: (tx: unknown) => sqlOf(tx, keys),
    transaction: <T>(fn: (tx: unknown) => Promise<T>) => db.transaction(fn),
    statementCount: count,
    close: async () => {
      await close();
    },
  };
}

/** `@pglock/drizzle` on drizzle-orm/node-postgres over a `pg.Pool`. */
export const nodePgPoolHarness = defineHarness<unknown>({
  name: 'drizzle (node-postgres Pool)',
  package: adapterPackage,
  capabilities: network,
  moduleUrl: import.meta.url,
  exportName: 'nodePgPoolHarness',
  async open(url, { max, errorListeners }) {
    const { pool, count } = countingPool({ connectionString: url, max }, { errorListeners });
    return setup(drizzleNodePg({ client: pool }) as unknown as AnyDb, count, () => pool.end());
  },
});

/**
 * `@pglock/drizzle` on drizzle-orm/node-postgres over one `pg.Client`: a wait is cancelled with its
 * cancel key, and session locks open a connection of their own.
 */
export const nodePgClientHarness = defineHarness<unknown>({
  name: 'drizzle (node-postgres Client)',
  package: adapterPackage,
  // One client runs one transaction at a time.
  capabilities: { ...ownSessions, concurrentCalls: false },
  moduleUrl: import.meta.url,
  exportName: 'nodePgClientHarness',
  async open(url, { errorListeners }) {
    let count = 0;
    const client = new pg.Client({ connectionString: url });
    if (errorListeners) client.on('error', () => undefined);
    await client.connect();
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
    return setup(
      drizzleNodePg({ client }) as unknown as AnyDb,
      () => count,
      () => client.end(),
    );
  },
});

function postgresJs(url: string, max: number, options: postgres.Options<Record<string, never>> = {}) {
  let count = 0;
  const client = postgres(url, {
    max,
    onnotice: () => undefined,
    debug: () => {
      count++;
    },
    ...options,
  });
  return {
    db: drizzlePostgresJs({ client }) as unknown as AnyDb,
    count: () => count,
    close: () => client.end({ timeout: 5 }),
  };
}

/** `@pglock/drizzle` on drizzle-orm/postgres-js; statements counted with postgres.js's `debug` hook. */
export const postgresJsHarness = defineHarness<unknown>({
  name: 'drizzle (postgres.js)',
  package: adapterPackage,
  capabilities: postgresJsCapabilities,
  moduleUrl: import.meta.url,
  exportName: 'postgresJsHarness',
  async open(url, { max }) {
    const { db, count, close } = postgresJs(url, max);
    return setup(db, count, close);
  },
});

/**
 * postgres.js as it must be set up behind a transaction-mode pooler: `prepare: false` (a named
 * statement prepared on one server connection is missing on the next, and postgres.js's retry then
 * commits a transaction that had failed, which PostgreSQL turns into ROLLBACK).
 */
export const postgresJsUnpreparedHarness = defineHarness<unknown>({
  name: 'drizzle (postgres.js, prepare: false)',
  package: adapterPackage,
  capabilities: postgresJsCapabilities,
  moduleUrl: import.meta.url,
  exportName: 'postgresJsUnpreparedHarness',
  async open(url, { max }) {
    const { db, count, close } = postgresJs(url, max, { prepare: false });
    return setup(db, count, close);
  },
});

const snakeKeys = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [postgres.fromCamel(key), value]));

/**
 * postgres.js with `transform: postgres.camel`: every row pglock reads comes back with camelCase
 * column names (inspection included). The suites' own SQL gets its snake_case names back.
 */
export const postgresJsCamelHarness = defineHarness<unknown>({
  name: 'drizzle (postgres.js, transform: camel)',
  package: adapterPackage,
  capabilities: postgresJsCapabilities,
  moduleUrl: import.meta.url,
  exportName: 'postgresJsCamelHarness',
  async open(url, { max }) {
    const { db, count, close } = postgresJs(url, max, { transform: postgres.camel });
    return setup(db, count, close, snakeKeys);
  },
});

let shared: Promise<PGlite> | undefined;

/**
 * `@pglock/drizzle` on drizzle-orm/pglite: an in-process PostgreSQL with one connection, so no
 * second session can contend, observe or cancel, and worker processes cannot share it.
 */
export const pgliteHarness = defineHarness<unknown>({
  name: 'drizzle (PGlite)',
  package: adapterPackage,
  capabilities: {
    ...network,
    contention: false,
    multiProcess: false,
    abort: false,
    countsStatements: false,
    session: false,
  },
  moduleUrl: import.meta.url,
  exportName: 'pgliteHarness',
  async open() {
    // Starting PGlite takes seconds; one instance per test process serves every test, as one app would.
    shared ??= PGlite.create();
    return setup(
      drizzlePglite({ client: await shared }) as unknown as AnyDb,
      () => 0,
      async () => undefined,
    );
  },
});
