import { type Capabilities, defineHarness, type Sql } from '@pglock/test-kit';
import postgres from 'postgres';
import { advisoryLocks } from '../src/index.ts';

type Tx = postgres.TransactionSql<Record<string, unknown>>;
type Options = postgres.Options<Record<string, postgres.PostgresType>>;
type Row = Record<string, unknown>;

/**
 * postgres.js's `sql.begin` rolls back on any failed statement, also inside pglock's savepoint; and
 * its ROLLBACK on a connection whose backend was terminated throws from postgres.js 3.4.9's write
 * timer (porsager/postgres#1208, unpatched here). Session locks open a connection of their own.
 */
const capabilities: Capabilities = {
  contention: true,
  multiProcess: true,
  abort: true,
  countsStatements: true,
  session: true,
  sessionConnection: 'own',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  nestedFailureRecovers: false,
  survivesTerminatedTransaction: false,
};

/** The kit's own SQL reads its columns by their names, which a column transform renamed. */
const snakeKeys = (row: Row): Row =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [postgres.fromCamel(key), value]));

/** A harness over one `postgres(url, options)`, its statements counted with postgres.js's `debug` hook. */
function postgresHarness(name: string, exportName: string, options: Options = {}) {
  const keys = options.transform === undefined ? (row: Row) => row : snakeKeys;
  const sqlOf =
    (tx: Tx): Sql =>
    async (text, values = []) =>
      [...(await tx.unsafe(text, values as never[]))].map((row) => keys(row as Row));
  return defineHarness<Tx>({
    name,
    capabilities,
    moduleUrl: import.meta.url,
    exportName,
    async open(url, { max }) {
      let count = 0;
      const sql = postgres(url, { max, onnotice: () => undefined, debug: () => void count++, ...options });
      return {
        db: sql,
        // A null (or other non-object) default goes to the adapter as given: the misuse suite checks it.
        advisoryLocks: (defaults) => advisoryLocks(sql, defaults),
        locksOn: (tx) => advisoryLocks(tx),
        sql: sqlOf,
        transaction: (fn) => sql.begin(fn) as never,
        statementCount: () => count,
        // `timeout`: once a backend was terminated under a running query, a plain `end()` never settles.
        close: () => sql.end({ timeout: 5 }),
      };
    },
  });
}

/** `@pglock/postgres` over `postgres(url)`. */
export const postgresJsHarness = postgresHarness('postgres (postgres.js)', 'postgresJsHarness');

/** postgres.js with `transform: postgres.camel`: every row pglock reads comes back with camelCase names. */
export const postgresJsCamelHarness = postgresHarness(
  'postgres (postgres.js, transform: camel)',
  'postgresJsCamelHarness',
  { transform: postgres.camel },
);

/**
 * postgres.js as it must be set up behind a transaction-mode pooler: `prepare: false` (a named
 * statement prepared on one server connection is missing on the next, and postgres.js's retry then
 * commits a transaction that had failed, which PostgreSQL turns into ROLLBACK).
 */
export const postgresJsUnpreparedHarness = postgresHarness(
  'postgres (postgres.js, prepare: false)',
  'postgresJsUnpreparedHarness',
  { prepare: false },
);
