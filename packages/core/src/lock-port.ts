import type { Statement } from './statement.ts';
import type { CheckedTransactionSettings, TransactionSettingName } from './transaction-settings.ts';

/**
 * A result row as a plain object, column name → value.
 *
 * @example
 * ```ts
 * import type { Row } from '@pglock/core/adapter';
 *
 * const rows: readonly Row[] = (await client.query('SELECT 1 AS one')).rows;
 * ```
 */
export type Row = Readonly<Record<string, unknown>>;

/**
 * One connection core runs statements on: a transaction's, or one pinned for a session lock.
 *
 * @example
 * ```ts
 * import type { PortConnection } from '@pglock/core/adapter';
 * import type pg from 'pg';
 *
 * const connectionOf = (client: pg.PoolClient): PortConnection => ({
 *   query: async (s) => (await client.query(s.text, [...s.values])).rows,
 * });
 * ```
 */
export interface PortConnection {
  /** Runs one statement on this connection and resolves its rows as plain objects. */
  query(statement: Statement): Promise<readonly Row[]>;
  /**
   * What the driver knows of the connection's transaction without a round trip (node-postgres keeps
   * the status of the last ReadyForQuery): `'failed'` once a statement failed inside it. Without it,
   * core asks the server before a commit, unless the port sets `reportsFailedCommit`.
   */
  transactionStatus?(): 'idle' | 'transaction' | 'failed' | undefined;
  /**
   * Interrupts this connection's running statement without borrowing a pooled connection: the
   * protocol CancelRequest, on a socket of its own (`sendCancelRequest` (the node-postgres room)). Without it, core runs
   * a guarded `pg_cancel_backend` on a {@link LockPort.controlConnection}.
   */
  cancel?(): Promise<void>;
  /**
   * {@link LockPort.reportsFailedCommit} for this connection, where it differs by driver (one
   * adapter over several): `true` when its driver itself rejects the commit of a failed transaction.
   */
  readonly reportsFailedCommit?: boolean | undefined;
}

/**
 * A connection for one or two statements beside the one that waits (a cancel, a pooler probe).
 *
 * @example
 * ```ts
 * import type { ControlConnection } from '@pglock/core/adapter';
 *
 * const control: ControlConnection = {
 *   query: async (s) => (await client.query(s.text, [...s.values])).rows,
 *   release: () => client.end(),
 * };
 * ```
 */
export interface ControlConnection {
  query(statement: Statement): Promise<readonly Row[]>;
  /** Gives it back (to its pool) or closes it. */
  release(): void | Promise<void>;
}

/**
 * A connection checked out for a session lock and kept until core releases it.
 *
 * @example
 * ```ts
 * import type { PinnedConnection } from '@pglock/core/adapter';
 *
 * const pinned: PinnedConnection = {
 *   query: async (s) => (await client.query(s.text, [...s.values])).rows,
 *   heartbeatOn: 'pinned',
 *   processID: client.processID ?? undefined,
 *   release: (state, cause) => client.release(state === 'clean' ? false : (cause ?? true)),
 * };
 * ```
 */
export interface PinnedConnection extends PortConnection {
  /**
   * The backend pid the driver learned when it connected (from the cancel key). Straight to
   * PostgreSQL it equals `pg_backend_pid()`, which settles the pooler check at once; through a pooler
   * it is the pooler's own number, and core probes instead.
   */
  readonly processID?: number | undefined;
  /**
   * Where the heartbeat runs: on this connection (`'pinned'`: also notices a silent network cut of
   * it), or from another connection of the database by backend pid (`'control'`: for drivers that
   * must never write to a connection that may have failed, as postgres.js, porsager/postgres#1208).
   */
  readonly heartbeatOn: 'pinned' | 'control';
  /**
   * Ends the pin. `'clean'`: the lock was released, hand the connection back. `'unknown'`: its lock
   * state is not known, make sure it holds nothing (destroy it, or unlock all before handing it back).
   * `'dead'`: it failed, send it nothing more and never hand it back for reuse.
   */
  release(state: 'clean' | 'unknown' | 'dead', cause?: Error): void | Promise<void>;
}

/**
 * What a transaction core asks for: settings core validated, and the lock wait to allow for.
 *
 * @example
 * ```ts
 * import type { LockPort, TransactionRequest } from '@pglock/core/adapter';
 *
 * const transaction: LockPort<MyDb, MyTx>['transaction'] = (db, request: TransactionRequest, body) =>
 *   db.transaction((tx) => body(tx, connectionFor(tx)), { isolationLevel: request.settings.isolationLevel });
 * ```
 */
export interface TransactionRequest {
  readonly settings: CheckedTransactionSettings;
  /**
   * The longest lock wait before the callback runs (ms), `undefined` without limit. An ORM whose
   * transaction has a timer (Prisma) adds it, so a lock granted late never finds the transaction expired.
   */
  readonly waitMs: number | undefined;
}

/**
 * How a port can interrupt a waiting statement.
 *
 * @example
 * ```ts
 * import type { Cancellation } from '@pglock/core/adapter';
 *
 * // node-postgres sends a protocol CancelRequest for the waiting connection itself.
 * const cancellation = (): Cancellation => 'connection';
 * ```
 */
export type Cancellation = 'connection' | 'control' | 'none';

/**
 * The one interface an adapter implements; {@link createAdvisoryLocks} builds every verb from it.
 * `Db` is what the app hands the adapter (a pool, a client, an ORM database), `Tx` what callbacks get.
 *
 * @example
 * ```ts
 * import { createAdvisoryLocks, type LockPort } from '@pglock/core/adapter';
 *
 * const port: LockPort<MyDb, MyTx> = {
 *   name: '@acme/pglock-mydb',
 *   transactionSettings: ['isolationLevel'],
 *   connectionOf: (handle) => (isTx(handle) ? connectionFor(handle) : undefined),
 *   transaction: (db, request, body) => db.transaction((tx) => body(tx, connectionFor(tx))),
 *   query: (db, s) => db.raw(s.text, s.values),
 *   cancellation: () => 'none',
 * };
 * export const advisoryLocks = (db: MyDb) => createAdvisoryLocks(port, db);
 * ```
 */
export interface LockPort<Db, Tx> {
  /** The package name, for messages. */
  readonly name: string;
  /** The transaction settings its ORM can apply (others are refused up front). */
  readonly transactionSettings: readonly TransactionSettingName[];
  /**
   * The adapter's own keys of `advisoryLocks(db, defaults)`, which core does not read (Kysely's
   * `control`): every other key but core's is refused as unknown.
   */
  readonly factoryOptions?: readonly string[] | undefined;
  /**
   * The connection behind `handle` when `handle` is a transaction (or a connection inside one):
   * `withLock` nests there with a savepoint, `lock`/`tryLock` accept it. `undefined` otherwise.
   */
  connectionOf(handle: unknown): PortConnection | undefined;
  /**
   * Opens a transaction on one pinned connection with the ORM's own API: commits when `body`
   * resolves, rolls back when it throws, and rejects with the body's error unchanged.
   */
  transaction<R>(
    db: Db,
    request: TransactionRequest,
    body: (tx: Tx, connection: PortConnection) => Promise<R>,
  ): Promise<R>;
  /** Runs one statement on `db` outside any transaction of pglock's (inspection). */
  query(db: Db, statement: Statement): Promise<readonly Row[]>;
  /** How a wait on `db` can be interrupted (`signal` is refused up front with `'none'`). */
  cancellation(db: Db): Cancellation;
  /**
   * A connection beside the waiting one: for a cancel when the connection cannot cancel itself, and
   * for the pooler check of a session lock. Prefer one that does not come from `db`'s pool (a
   * cancel must work when every pooled connection waits); core bounds the wait for it.
   */
  controlConnection?(db: Db): Promise<ControlConnection>;
  /**
   * Pins a dedicated connection for a session lock. `onDeath` must be listening from checkout to
   * release (a backend terminated mid-wait must never be an unhandled `'error'`). Absent: the adapter
   * offers no session locks.
   */
  pin?(db: Db, onDeath: (cause: unknown) => void): Promise<PinnedConnection>;
  /** True when the ORM itself rejects a COMMIT that PostgreSQL answered with ROLLBACK. */
  readonly reportsFailedCommit?: boolean;
  /**
   * True when the `Tx` a callback gets is a driver connection that serves later callers once the
   * transaction ends (node-postgres's pooled client). Otherwise core remembers each settled callback's
   * handle and refuses a lock call on it (`LockUsageError`) however late it comes; for a reused
   * handle it can tell such a call from the next owner's only while the call runs in the settled
   * callback's async context.
   */
  readonly reusesTransactionHandle?: boolean;
  /**
   * The wait when `timeoutMs` is omitted, where waiting without limit is wrong for the ORM (Prisma):
   * `'withLock'` for a transaction of pglock's own, `'lock'` inside a running one (a `lock(tx)`, or a
   * nested `withLock`). `db` is the handle the call was given (its own defaults may matter).
   */
  defaultTimeoutMs?(
    verb: 'withLock' | 'lock',
    settings: CheckedTransactionSettings,
    db: Db,
  ): number | undefined;
}
