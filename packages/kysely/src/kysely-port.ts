import type { LockPort, PortConnection, Row, Statement } from '@pglock/core/adapter';
import { type LentConnection, lentControl, lentPin } from '@pglock/core/drivers/postgres-js';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { CompiledQuery, type Kysely, type QueryExecutorProvider } from 'kysely';

/** What the port is handed: a `Kysely` instance, a transaction, or the `db` of `db.connection()`. */
export type Db = Kysely<unknown>;

// pglock's statements bypass the user's plugins (CamelCasePlugin renames the result columns core
// reads, WithSchemaPlugin rewrites identifiers): one plugin-free executor per handle, made once.
const executors = new WeakMap<object, QueryExecutorProvider>();

/** `map`'s value for `key`, made on first use. */
function cached<V>(map: WeakMap<object, V>, key: object, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/** `handle`'s executor without the user's plugins, as a provider for `RawBuilder.execute`. */
function pluginFree(handle: Db): QueryExecutorProvider {
  const executor = handle.getExecutor().withoutPlugins();
  return { getExecutor: () => executor };
}

function runOn(provider: QueryExecutorProvider, s: Statement): Promise<readonly Row[]> {
  // Compiled already: core's text has PostgreSQL's `$n` placeholders (every Kysely dialect pglock
  // runs on is PostgreSQL's) and every value is a bound parameter, never text; nothing is built or
  // compiled per statement.
  const query = CompiledQuery.raw(s.text, s.values as unknown[]) as CompiledQuery<Row>;
  return provider.getExecutor().executeQuery(query).then(rowsOf);
}

const rowsOf = (result: QueryResult<Row>): readonly Row[] => result.rows;

function run(handle: Db, s: Statement): Promise<readonly Row[]> {
  return runOn(
    cached(executors, handle, () => pluginFree(handle)),
    s,
  );
}

function isTransaction(handle: unknown): handle is Db {
  return (
    typeof handle === 'object' &&
    handle !== null &&
    (handle as { isTransaction?: unknown }).isTransaction === true &&
    typeof (handle as Db).getExecutor === 'function'
  );
}

const connections = new WeakMap<object, PortConnection>();
// The database of each transaction pglock opened, kept on the handle pglock made for the callback:
// a cancel of a wait inside it borrows a connection there (a transaction cannot lend one, and Kysely
// does not say where it came from). A property, not a WeakMap entry per transaction.
const ROOT = Symbol('pglock.kysely.root');
type Rooted = Db & { [ROOT]?: Db };

const connectionFor = (trx: Db): PortConnection =>
  cached(connections, trx, () => ({ query: (s) => run(trx, s) }));

/**
 * Watches the queries of the handle a pglock callback gets: each compiled query is pending until its
 * result comes back. Kysely does not tell a COMMIT answered with ROLLBACK, so core would ask the
 * server (`SELECT 1`) before every COMMIT; with none pending no statement failed in the transaction
 * and the check is skipped: one statement less, and on postgres.js no pglock write after the
 * callback (a write to a connection postgres.js saw close kills the process, porsager/postgres#1208).
 * A query that failed, was never run or still runs leaves the question to the server.
 */
class QueryWatch implements KyselyPlugin {
  readonly #pending = new Set<unknown>();
  get settled(): boolean {
    return this.#pending.size === 0;
  }
  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    this.#pending.add(queryId);
    return node;
  }
  transformResult({ result, queryId }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.#pending.delete(queryId);
    // Not an async method: one promise per query of the callback, not an async frame as well.
    return Promise.resolve(result);
  }
}

/**
 * `trx` as the callback gets it, and its connection for core, which knows when nothing failed.
 * pglock's statements on it use the transaction's executor without plugins, made on first use and
 * kept by the connection (no map entry per transaction).
 */
function watched(trx: Db): [Db, PortConnection] {
  const watch = new QueryWatch();
  let provider: QueryExecutorProvider | undefined;
  const connection: PortConnection = {
    query(s) {
      provider ??= pluginFree(trx);
      return runOn(provider, s);
    },
    transactionStatus: () => (watch.settled ? 'transaction' : undefined),
  };
  return [trx.withPlugin(watch), connection];
}

/** A connection of `db` for as long as pglock needs it: the callback of `db.connection().execute` stays open. */
function lend(db: Db): Promise<LentConnection> {
  return new Promise((resolve, reject) => {
    let lent = false;
    const done: Promise<void> = db
      .connection()
      .execute(async (conn) => {
        const fragile = await isPostgresJs(conn);
        lent = true;
        // Ending the callback makes Kysely hand the connection back to its pool.
        await new Promise<void>((end) => {
          const handBack = () => {
            end();
            return done;
          };
          resolve({ query: (s) => run(conn, s), handBack, fragile });
        });
      })
      .catch((error: unknown) => {
        if (!lent) reject(error);
      });
  });
}

// postgres.js throws from a timer on a write to a connection it saw close, and takes a closed
// reserved connection back into its pool (porsager/postgres#1208, #1199): core's lent-connection
// rules keep pglock off such a connection. kysely-postgres-js's connection class tells.
async function isPostgresJs(conn: Db): Promise<boolean> {
  const connection = await conn.getExecutor().provideConnection(async (c) => c);
  return connection.constructor.name === 'PostgresJSConnection';
}

/**
 * pglock's port for Kysely: `withLock` opens `db.transaction()` with Kysely's builder; a wait is
 * cancelled with core's guarded `pg_cancel_backend` on a connection borrowed from `db` (Kysely has no
 * protocol cancel), or from `control`; a session lock holds a `db.connection()` callback open, and
 * its heartbeat reads `pg_locks` from another connection, never writing to a pinned postgres.js one.
 */
function kyselyPortWith(control: Db | undefined): LockPort<Db, Db> {
  const controlOf = (db: Db): Db => control ?? (db as Rooted)[ROOT] ?? db;
  return {
    name: '@pglock/kysely',
    transactionSettings: ['isolationLevel', 'accessMode'],
    factoryOptions: ['control'],
    connectionOf: (handle) => (isTransaction(handle) ? connectionFor(handle) : undefined),
    transaction(db, { settings }, body) {
      let builder = db.transaction();
      if (settings.isolationLevel !== undefined) builder = builder.setIsolationLevel(settings.isolationLevel);
      if (settings.accessMode !== undefined) builder = builder.setAccessMode(settings.accessMode);
      return builder.execute((trx) => {
        const [handle, connection] = watched(trx);
        (handle as Rooted)[ROOT] = db;
        return body(handle, connection);
      });
    },
    query: (db, s) => run(control ?? db, s),
    cancellation: (db) => (isTransaction(controlOf(db)) ? 'none' : 'control'),
    controlConnection: async (db) => lentControl(await lend(controlOf(db))),
    pin: async (db, onDeath) => lentPin(await lend(db), (s) => run(control ?? db, s), onDeath),
  };
}

/** The port over `db` alone. */
export const kyselyPort: LockPort<Db, Db> = kyselyPortWith(undefined);

const controlled = new WeakMap<object, LockPort<Db, Db>>();

/** The port whose cancels, pooler checks, heartbeats and inspection run on `control`. */
export const kyselyPortFor = (control: Db): LockPort<Db, Db> =>
  cached(controlled, control, () => kyselyPortWith(control));
