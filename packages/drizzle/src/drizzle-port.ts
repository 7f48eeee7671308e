import { LockUsageError } from '@pglock/core';
import type * as port from '@pglock/core/adapter';
import {
  claimNodePostgresClient,
  guardNodePostgresClient,
  isNodePostgresPool,
  type NodePostgresPool,
  type NodePostgresStandaloneClient,
  nodePostgresConnection,
  openNodePostgresClient,
  pinNodePostgresClient,
  pinOwnConnection,
  queryNodePostgres,
} from '@pglock/core/drivers/node-postgres';
import {
  openPostgresJs,
  type PostgresJsSql,
  postgresJsConnection,
  refusedCommitError,
} from '@pglock/core/drivers/postgres-js';
import type { DrizzleDatabaseLike } from './drizzle-types.ts';

/** Drizzle's session class of each driver pglock runs its statements on directly, below Drizzle. */
export type Driver = 'NodePgSession' | 'PostgresJsSession' | 'PgliteSession';
type Listener = (error?: Error) => void;

/**
 * The members called here of a driver client: `pg.Pool`, `pg.Client`, `pg.PoolClient`, PGlite (or
 * its transaction), a postgres.js `sql` (or its `begin` scope), typed by those members alone (core's
 * slices of node-postgres and postgres.js, and what opens a connection of its own).
 */
type Client = NodePostgresPool & NodePostgresStandaloneClient & PostgresJsSql & { readonly options: object };

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
    const { tx } = classOf(handle);
    found = driver && session?.client ? { driver, client: session.client, tx } : null;
    // A transaction is new for every call and short-lived: no map entry for each (their upkeep is
    // the garbage collector's); a database is met again on every call.
    if (!tx) handles.set(handle, found);
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
function run({ driver, client }: Via, s: port.Statement): Promise<readonly port.Row[]> {
  return driver === 'PostgresJsSession' ? client.unsafe(s.text, s.values) : queryNodePostgres(client, s);
}

// PGlite's connections, one per client as core's are: one process, no cancel, and PGlite itself
// rejects the COMMIT of a failed transaction.
const pgliteConnections = new WeakMap<object, port.PortConnection>();

/** The connection of a driver client: core's of node-postgres and postgres.js, or PGlite's. */
function connectionOf(via: Via): port.PortConnection {
  const { driver, client } = via;
  if (driver === 'NodePgSession') return nodePostgresConnection(client);
  if (driver === 'PostgresJsSession') return postgresJsConnection(client);
  let connection = pgliteConnections.get(client);
  if (connection === undefined) {
    connection = { query: (s) => run(via, s), reportsFailedCommit: true };
    pgliteConnections.set(client, connection);
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
  if (driver === 'NodePgSession') {
    const own = await openNodePostgresClient(client, onClose);
    return { via: { driver, client: own.client } as Via, end: own.end };
  }
  const own = openPostgresJs(await import('postgres'), client, onClose);
  return { via: { driver, client: own.sql } as Via, end: own.end };
}

/**
 * pglock's port for Drizzle: a transaction is `db.transaction(body, config)`, and pglock's statements
 * run on its driver client; a wait is cancelled with the protocol, never through the pool; a session
 * lock pins a client checked out of a `pg.Pool`, else a connection of its own (a reserved postgres.js
 * connection can be neither destroyed alone nor handed back once dead, porsager/postgres#1199).
 */
export const drizzlePort: port.LockPort<DrizzleDatabaseLike, unknown> = {
  name: '@pglock/drizzle',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  connectionOf(handle) {
    const found = resolve(handle);
    return found?.tx ? connectionOf(found) : undefined;
  },
  async transaction(db, { settings }, body) {
    const { driver, client } = drizzleHandle(db, 'withLock');
    // A lone pg.Client: Drizzle would send a second BEGIN into the running transaction.
    const unclaim =
      driver === 'NodePgSession' && !isNodePostgresPool(client) ? claimNodePostgresClient(client) : undefined;
    const given = settings.isolationLevel ?? settings.accessMode ?? settings.deferrable;
    // pg-pool takes its 'error' listener off a checked-out client (drizzle-orm 1.0 adds its own): a
    // backend that dies while the callback runs no statement must not be an unhandled 'error' event.
    let unguard: (() => void) | undefined;
    let resolved = false;
    const inTransaction = async (tx: unknown) => {
      const inner = drizzleHandle(tx, 'withLock');
      if (driver === 'NodePgSession') unguard = guardNodePostgresClient(inner.client);
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
      // The body resolved, yet the driver would not commit: postgres.js's `begin` rethrows instead.
      throw (resolved && refusedCommitError(error, driver === 'PostgresJsSession', 'withLock')) || error;
    } finally {
      unguard?.();
      unclaim?.();
    }
  },
  query(db, s) {
    const found = drizzleHandle(db, 'isLocked');
    return found.tx ? connectionOf(found).query(s) : run(found, s);
  },
  cancellation: (db) => (resolve(db)?.driver === 'PgliteSession' ? 'none' : 'connection'),
  async controlConnection(db) {
    const own = await ownClient(db, 'acquireSessionLock');
    return { query: (s) => run(own.via, s), release: own.end };
  },
  async pin(db, onDeath): Promise<port.PinnedConnection> {
    const { client } = drizzleHandle(db, 'acquireSessionLock');
    if (typeof client.totalCount !== 'number') {
      const died = (error?: Error): void => onDeath(error ?? new Error('the connection ended'));
      const own = await ownClient(db, 'acquireSessionLock', died);
      return pinOwnConnection(connectionOf(own.via), own.end, () => own.via.client.processID);
    }
    return pinNodePostgresClient(client, onDeath);
  },
};
