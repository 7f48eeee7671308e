import {
  backendAliveStatement,
  backendPidStatement,
  type ControlConnection,
  cell,
  type LockPort,
  type PinnedConnection,
  type PortConnection,
  type Row,
  type Statement,
  sqlStateOf,
  unlockAllStatement,
  within,
} from '@pglock/core/adapter';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { type Kysely, type QueryExecutorProvider, sql } from 'kysely';

/** What the port is handed: a `Kysely` instance, a transaction, or the `db` of `db.connection()`. */
export type Db = Kysely<unknown>;

/** The longest wait for the cleanup of a pinned connection (and for the check before it). */
const CLEANUP_MS = 2_000;

// pglock's statements bypass the user's plugins (CamelCasePlugin renames the result columns core
// reads, WithSchemaPlugin rewrites identifiers): one plugin-free executor per handle, made once.
const executors = new WeakMap<object, QueryExecutorProvider>();

/** `map`'s value for `key`, made on first use. */
function cached<V>(map: WeakMap<object, V>, key: object, make: () => V): V {
  const value = map.get(key) ?? make();
  map.set(key, value);
  return value;
}

function run(handle: Db, s: Statement): Promise<readonly Row[]> {
  const provider = cached(executors, handle, () => {
    const executor = handle.getExecutor().withoutPlugins();
    return { getExecutor: () => executor };
  });
  // core's fragments are the template's strings, so every value is a bound parameter, never text.
  const query = sql<Row>(s.fragments as unknown as TemplateStringsArray, ...s.values.map((v) => sql.val(v)));
  return query.execute(provider).then((result) => result.rows);
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
// The database of each transaction pglock opened: a cancel of a wait inside it borrows a connection
// there (a transaction cannot lend one, and Kysely does not say where it came from).
const roots = new WeakMap<object, Db>();

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
  async transformResult({ result, queryId }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.#pending.delete(queryId);
    return result;
  }
}

/** `trx` as the callback gets it, and its connection for core, which knows when nothing failed. */
function watched(trx: Db): [Db, PortConnection] {
  const watch = new QueryWatch();
  const status = () => (watch.settled ? 'transaction' : undefined);
  return [trx.withPlugin(watch), { query: (s) => run(trx, s), transactionStatus: status }];
}

interface Lent {
  readonly conn: Db;
  /** Ends the `db.connection()` callback, so Kysely hands the connection back to its pool. */
  handBack(): Promise<void>;
}

/** A connection of `db` for as long as pglock needs it: the callback of `db.connection().execute` stays open. */
function lend(db: Db): Promise<Lent> {
  return new Promise((resolve, reject) => {
    let lent = false;
    const done: Promise<void> = db
      .connection()
      .execute(
        (conn) =>
          new Promise<void>((end) => {
            lent = true;
            resolve({
              conn,
              handBack: () => {
                end();
                return done;
              },
            });
          }),
      )
      .catch((error: unknown) => {
        if (!lent) reject(error);
      });
  });
}

async function controlOn(db: Db): Promise<ControlConnection> {
  const { conn, handBack } = await lend(db);
  let died = false;
  const query = (s: Statement) =>
    run(conn, s).catch((error: unknown) => {
      died ||= connectionDied(error);
      throw error;
    });
  // A control connection that died is not handed back on postgres.js, for the same reason as a pin.
  return { query, release: async () => (died && (await isPostgresJs(conn)) ? undefined : handBack()) };
}

// postgres.js throws from a timer, which no caller can catch, on a write to a connection it saw
// close, and a released reserved connection goes back to its pool even when closed, to crash the
// app's next query (porsager/postgres#1208). Such a connection is never written to nor handed back:
// postgres.js reopens a closed connection by itself. kysely-postgres-js's connection class tells.
async function isPostgresJs(conn: Db): Promise<boolean> {
  const connection = await conn.getExecutor().provideConnection(async (c) => c);
  return connection.constructor.name === 'PostgresJSConnection';
}

/** The connection itself failed: no SQLSTATE (a closed socket), or FATAL (the server ends the session). */
function connectionDied(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | null)?.severity;
  return sqlStateOf(error) === undefined || severity === 'FATAL' || severity === 'PANIC';
}

/**
 * Whether backend `pid` still exists, asked from another connection: `undefined` when no answer came
 * in time (a busy pool), `false` also when the server is out of reach.
 */
function stillThere(control: Db, pid: number): Promise<boolean | undefined> {
  const answer = run(control, backendAliveStatement(pid)).then(
    ([row]) => Number(cell(row ?? {}, 'alive')) > 0,
    () => false,
  );
  return within(answer, CLEANUP_MS, 'busy').catch(() => undefined);
}

/** How often (and how many times) a postgres.js pin left with no answer is asked about again. */
const RECHECK_MS = 1_000;
const RECHECKS = 30;

async function pinOn(db: Db, control: Db, onDeath: (cause: unknown) => void): Promise<PinnedConnection> {
  const { conn, handBack } = await lend(db);
  let failed = false;
  const query = async (s: Statement): Promise<readonly Row[]> => {
    try {
      return await run(conn, s);
    } catch (error) {
      if (connectionDied(error)) {
        failed = true;
        onDeath(error);
      }
      throw error;
    }
  };
  const fragile = await isPostgresJs(conn);
  // Kysely cannot destroy a connection: the pool gets back only a clean one, or (not postgres.js)
  // a broken one, which its driver discards (pg-pool drops a client that is not queryable).
  const settle = (clean: boolean) => (clean || !fragile ? handBack() : undefined);
  let pid = Number.NaN;
  if (fragile) {
    try {
      pid = Number(cell((await query(backendPidStatement))[0] ?? {}, 'pid'));
    } catch (error) {
      await settle(!failed);
      throw error;
    }
  }
  // Lock state unknown: clear every session lock before Kysely gets the connection back, bounded (a
  // statement on a dead connection may never settle).
  const clear = (): Promise<boolean> =>
    within(query(unlockAllStatement), CLEANUP_MS, 'no answer').then(
      () => true,
      () => false,
    );
  // On postgres.js only while its backend lives, asked from another connection; with no answer yet
  // the pin is kept (a write could land on a connection postgres.js saw close) and asked about again
  // in the background, so a busy pool gets it back later instead of never.
  const clearFragile = async (): Promise<void> => {
    for (let round = 0; round < RECHECKS; round++) {
      const alive = await stillThere(control, pid);
      if (alive === false) return;
      if (alive === true) return settle(!failed && (await clear()));
      await new Promise((resolve) => setTimeout(resolve, RECHECK_MS).unref());
    }
  };
  return {
    query,
    heartbeatOn: 'control',
    processID: undefined,
    async release(state) {
      if (state === 'clean' || state === 'dead' || failed) return settle(state === 'clean');
      if (!fragile) return settle(await clear());
      void clearFragile().catch(() => undefined);
    },
  };
}

/**
 * pglock's port for Kysely: `withLock` opens `db.transaction()` with Kysely's builder; a wait is
 * cancelled with core's guarded `pg_cancel_backend` on a connection borrowed from `db` (Kysely has no
 * protocol cancel), or from `control`; a session lock holds a `db.connection()` callback open, and
 * its heartbeat reads `pg_locks` from another connection, never writing to a pinned postgres.js one.
 */
function kyselyPortWith(control: Db | undefined): LockPort<Db, Db> {
  const controlOf = (db: Db): Db => control ?? roots.get(db) ?? db;
  return {
    name: '@pglock/kysely',
    transactionSettings: ['isolationLevel', 'accessMode'],
    connectionOf: (handle) => (isTransaction(handle) ? connectionFor(handle) : undefined),
    transaction(db, { settings }, body) {
      let builder = db.transaction();
      if (settings.isolationLevel !== undefined) builder = builder.setIsolationLevel(settings.isolationLevel);
      if (settings.accessMode !== undefined) builder = builder.setAccessMode(settings.accessMode);
      return builder.execute((trx) => {
        const [handle, connection] = watched(trx);
        roots.set(handle, db);
        return body(handle, connection);
      });
    },
    query: (db, s) => run(control ?? db, s),
    cancellation: (db) => (isTransaction(controlOf(db)) ? 'none' : 'control'),
    controlConnection: (db) => controlOn(controlOf(db)),
    pin: (db, onDeath) => pinOn(db, control ?? db, onDeath),
  };
}

/** The port over `db` alone. */
export const kyselyPort: LockPort<Db, Db> = kyselyPortWith(undefined);

const controlled = new WeakMap<object, LockPort<Db, Db>>();

/** The port whose cancels, pooler checks, heartbeats and inspection run on `control`. */
export const kyselyPortFor = (control: Db): LockPort<Db, Db> =>
  cached(controlled, control, () => kyselyPortWith(control));
