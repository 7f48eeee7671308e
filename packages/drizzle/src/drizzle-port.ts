import { LockUsageError, TransactionRolledBackError } from '@pglock/core';
import type { LockPort, PinnedConnection, PortConnection, Row, Statement } from '@pglock/core/adapter';
import { SqlState, sendCancelRequest, sqlStateOf } from '@pglock/core/adapter';
import type { DrizzleDatabaseLike } from './drizzle-types.ts';

/** Drizzle's session class of each driver pglock runs its statements on directly, below Drizzle. */
export type Driver = 'NodePgSession' | 'PostgresJsSession' | 'PgliteSession';
type Query = Promise<Row[]> & {
  readonly state?: { readonly pid?: number };
  readonly active?: boolean;
  readonly canceller?: (query: Query) => Promise<void>;
};
type Listener = (error?: Error) => void;

/**
 * The members called here of a driver client: `pg.Pool`, `pg.Client`, `pg.PoolClient`, PGlite (or
 * its transaction), a postgres.js `sql` (or its `begin` scope), typed by those members alone.
 */
interface Client {
  query(text: string, values: readonly string[]): Promise<{ rows: Row[] }>;
  unsafe(text: string, values: readonly string[]): Query;
  on(event: 'error' | 'end', listener: Listener): unknown;
  removeListener(event: 'error' | 'end', listener: Listener): unknown;
  getTransactionStatus?(): string | null;
  connect(): Promise<Client & { release(destroy?: Error | boolean): void }>;
  end(options?: object): Promise<void>;
  readonly processID?: number | null;
  readonly readyForQuery?: boolean;
  readonly totalCount?: number;
  readonly options: object;
  readonly connectionParameters?: object;
  readonly Client?: new (config?: object) => Client;
}

/** The driver client behind a Drizzle database or transaction, and whether it is a transaction. */
export type DrizzleHandle = { readonly driver: Driver; readonly client: Client; readonly tx: boolean };
type Via = Omit<DrizzleHandle, 'tx'>;

// Drizzle brands its classes with a static `entityKind` under this symbol, the same in 0.44, 0.45
// and 1.0: reading it needs no import of drizzle-orm (whose `PgTransaction` is `PgAsyncTransaction`
// in 1.0) nor of any driver.
const ENTITY_KIND = Symbol.for('drizzle:entityKind');
const DRIVERS: readonly Driver[] = ['NodePgSession', 'PostgresJsSession', 'PgliteSession'];
const classes = new WeakMap<object, { readonly driver: Driver | undefined; readonly tx: boolean }>();
const handles = new WeakMap<object, DrizzleHandle | null>();

function classOf(value: unknown): { readonly driver: Driver | undefined; readonly tx: boolean } {
  const ctor: unknown = (value as { constructor?: unknown } | null | undefined)?.constructor;
  if (typeof ctor !== 'function') return { driver: undefined, tx: false };
  let found = classes.get(ctor);
  if (found === undefined) {
    const kinds: unknown[] = [];
    for (let c: unknown = ctor; typeof c === 'function'; c = Object.getPrototypeOf(c)) {
      kinds.push(Reflect.get(c, ENTITY_KIND));
    }
    const tx = kinds.includes('PgTransaction') || kinds.includes('PgAsyncTransaction');
    found = { driver: DRIVERS.find((driver) => kinds.includes(driver)), tx };
    classes.set(ctor, found);
  }
  return found;
}

/** The driver client behind a Drizzle database or transaction (`undefined` for anything else). */
export function resolve(handle: unknown): DrizzleHandle | undefined {
  if (typeof handle !== 'object' || handle === null) return undefined;
  let found = handles.get(handle);
  if (found === undefined) {
    const session = (handle as { session?: { client?: Client } }).session;
    const { driver } = classOf(session);
    found = driver && session?.client ? { driver, client: session.client, tx: classOf(handle).tx } : null;
    handles.set(handle, found);
  }
  return found ?? undefined;
}

/** {@link resolve}, or `LockUsageError` naming `verb`. */
export function drizzleHandle(handle: unknown, verb: string): DrizzleHandle {
  const found = resolve(handle);
  if (found !== undefined) return found;
  throw new LockUsageError(
    `${verb}: expected a Drizzle PostgreSQL database or transaction of drizzle-orm/node-postgres, drizzle-orm/postgres-js or drizzle-orm/pglite.`,
  );
}

/** The rows `execute` would give, read below it: pg's and PGlite's `{ rows }`, postgres.js's array. */
function run({ driver, client }: Via, s: Statement): Promise<readonly Row[]> {
  if (driver === 'PostgresJsSession') return client.unsafe(s.text, s.values);
  return client.query(s.text, s.values).then((result) => result.rows);
}

/**
 * A postgres.js connection: a wait is cancelled with its query's canceller (a CancelRequest on a
 * socket of its own); once the connection itself failed nothing more is written to it (postgres.js
 * would throw from a timer, porsager/postgres#1208). `processID` is its cancel key's.
 */
function postgresJsConnection(sql: Client): PortConnection & { readonly processID: number | undefined } {
  let running: Query | undefined;
  let broken: unknown;
  return {
    async query(s) {
      if (broken !== undefined) throw broken;
      running = sql.unsafe(s.text, s.values);
      return running.catch((error: unknown) => {
        if (sqlStateOf(error) === undefined) broken = error;
        throw error;
      });
    },
    // The query's own canceller, awaited so that a late CancelRequest cannot reach a later statement
    // (its `cancel()` runs it once and drops the promise); on a settled query it would never settle.
    cancel: async () => (running?.active ? running.canceller?.(running) : undefined),
    reportsFailedCommit: true,
    get processID() {
      return running?.state?.pid;
    },
  };
}

const STATUS = { I: 'idle', T: 'transaction', E: 'failed' } as const;
const connections = new WeakMap<object, PortConnection>();

/** The connection of a driver client, made once per client (a pooled pg client serves many transactions). */
function connectionOf(via: Via): PortConnection {
  const { driver, client } = via;
  let connection = connections.get(client);
  if (connection === undefined) {
    const query = (s: Statement) => run(via, s);
    // Read only once the server's ReadyForQuery is in: a failed query rejects before it arrives.
    const status = () =>
      client.readyForQuery === false
        ? undefined
        : STATUS[client.getTransactionStatus?.() as keyof typeof STATUS];
    connection =
      driver === 'PostgresJsSession'
        ? postgresJsConnection(client)
        : driver === 'PgliteSession'
          ? { query, reportsFailedCommit: true }
          : { query, transactionStatus: status, cancel: () => sendCancelRequest(client) };
    connections.set(client, connection);
  }
  return connection;
}

/**
 * A driver client outside `db`'s pool, with its settings: for the pooler probe, for session locks
 * that must be destroyable on their own, and for the migrator. postgres.js gets what its own
 * `subscribe` opens: one connection, without idle or lifetime end.
 */
export async function ownClient(db: unknown, verb: string, onClose: Listener = () => undefined) {
  const { driver, client, tx } = drizzleHandle(db, verb);
  if (tx || driver === 'PgliteSession')
    throw new LockUsageError(`${verb}: needs a second connection of ${driver}.`);
  let own: Client;
  if (driver === 'PostgresJsSession') {
    type Factory = (options: object) => Client;
    const module = (await import('postgres')) as unknown as Factory & { default?: Factory };
    const options = { ...client.options, max: 1, idle_timeout: null, max_lifetime: null, fetch_types: false };
    own = (module.default ?? module)({ ...options, no_subscribe: true, onclose: () => onClose() });
  } else {
    own = client.Client
      ? new client.Client(client.options)
      : new (client.constructor as new (config?: object) => Client)(client.connectionParameters);
    own.on('error', onClose);
    own.on('end', onClose);
    await own.connect();
  }
  // postgres.js ends at once with a `timeout` of 0 s; pg's `end()` takes no options.
  const end = () => (driver === 'NodePgSession' ? own.end() : own.end({ timeout: 0 })).catch(() => undefined);
  return { via: { driver, client: own } as Via, end };
}

// The body resolved, yet the driver would not commit: postgres.js's `begin` rethrows a failed
// statement instead of sending COMMIT; PGlite answers a COMMIT that PostgreSQL turned into ROLLBACK
// with 25P02. (node-postgres reports a failed transaction in its status, which core reads.)
function refusedCommit(driver: Driver, error: unknown): boolean {
  const state = sqlStateOf(error);
  const ofCommit = /^commit$/i.test(String((error as { query?: unknown }).query));
  return state === SqlState.inFailedTransaction || (driver === 'PostgresJsSession' && !!state && !ofCommit);
}

/**
 * pglock's port for Drizzle: a transaction is `db.transaction(body, config)`, and pglock's statements
 * run on its driver client; a wait is cancelled with the protocol, never through the pool; a session
 * lock pins a client checked out of a `pg.Pool`, else a connection of its own (a reserved postgres.js
 * connection can be neither destroyed alone nor handed back once dead, porsager/postgres#1199).
 */
export const drizzlePort: LockPort<DrizzleDatabaseLike, unknown> = {
  name: '@pglock/drizzle',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  connectionOf(handle) {
    const found = resolve(handle);
    return found?.tx ? connectionOf(found) : undefined;
  },
  async transaction(db, { settings }, body) {
    const { driver } = drizzleHandle(db, 'withLock');
    const given = settings.isolationLevel ?? settings.accessMode ?? settings.deferrable;
    // pg-pool takes its 'error' listener off a checked-out client (drizzle-orm 1.0 adds its own): a
    // backend that dies while the callback runs no statement must not be an unhandled 'error' event.
    let pg: Client | undefined;
    let lost = false;
    const onError = () => {
      lost = true;
    };
    let resolved = false;
    const inTransaction = async (tx: unknown) => {
      const inner = drizzleHandle(tx, 'withLock');
      if (driver === 'NodePgSession') pg = inner.client;
      pg?.on('error', onError);
      const result = await body(tx, connectionOf(inner));
      resolved = true;
      return result;
    };
    try {
      return await db.transaction(
        inTransaction as never,
        (given === undefined ? undefined : settings) as never,
      );
    } catch (error) {
      if (!resolved || !refusedCommit(driver, error)) throw error;
      throw new TransactionRolledBackError(
        'withLock: the callback resolved, but a statement in its transaction had failed, so the transaction was rolled back and nothing it wrote was saved. Let the statement’s error leave the callback, or wrap the statement that may fail in a nested withLock (a savepoint).',
        { cause: error },
      );
    } finally {
      if (!lost) pg?.removeListener('error', onError);
    }
  },
  query(db, s) {
    const found = drizzleHandle(db, 'isLocked');
    return found.tx ? connectionOf(found).query(s) : run(found, s);
  },
  cancellation: (db) =>
    (rootDrivers.get(db) ?? resolve(db)?.driver) === 'PgliteSession' ? 'none' : 'connection',
  async controlConnection(db) {
    const own = await ownClient(db, 'acquireSessionLock');
    return { query: (s: Statement) => run(own.via, s), release: own.end };
  },
  async pin(db, onDeath): Promise<PinnedConnection> {
    const { driver, client } = drizzleHandle(db, 'acquireSessionLock');
    const died = (error?: Error): void => onDeath(error ?? new Error('the connection ended'));
    if (typeof client.totalCount !== 'number') {
      const own = await ownClient(db, 'acquireSessionLock', died);
      const connection: PortConnection & { processID?: number } = connectionOf(own.via);
      return {
        ...connection,
        heartbeatOn: 'pinned',
        release: own.end,
        // Read when core needs it: postgres.js learns its cancel key with the first statement.
        get processID() {
          return connection.processID ?? own.via.client.processID ?? undefined;
        },
      };
    }
    const checkedOut = await client.connect();
    checkedOut.on('error', died);
    checkedOut.on('end', died);
    const release = (state: 'clean' | 'unknown' | 'dead', cause?: Error): void => {
      checkedOut.removeListener('end', died);
      // Handed back only when clean; else destroyed, its 'error' listener kept for the teardown.
      if (state === 'clean') checkedOut.removeListener('error', died);
      checkedOut.release(state === 'clean' ? undefined : (cause ?? true));
    };
    const processID = checkedOut.processID ?? undefined;
    return { ...connectionOf({ driver, client: checkedOut }), processID, heartbeatOn: 'pinned', release };
  },
};

/** One stand-in per driver for "a transaction of this driver": `lock(tx)` binds its verbs once, not per tx. */
export const transactionRoots = new Map(DRIVERS.map((driver) => [driver, { driver }]));
const rootDrivers = new Map<unknown, Driver>(DRIVERS.map((driver) => [transactionRoots.get(driver), driver]));
