import type {
  AdvisoryLockInfo,
  AdvisoryLocks,
  AdvisoryLocksOptions,
  LockKeyInput,
  LockOptions,
  LockTarget,
  SessionAdvisoryLocks,
  SessionLock,
  SessionLockOptions,
  TryResult,
  WithLockOptions,
} from '@pglock/core';
import type { TransactionSettingName } from '@pglock/core/adapter';

/** Runs SQL on the connection the adapter gave the callback (its transaction, or pinned connection). */
export type Sql = (text: string, values?: readonly unknown[]) => Promise<Record<string, unknown>[]>;

/** What an adapter can do; suites that need more are skipped with the reason, never silently. */
export interface Capabilities {
  /** Separate connections can contend for a lock (false for PGlite: one in-process connection). */
  readonly contention: boolean;
  /** Child processes can import the harness module and run the adapter (separate-process suites). */
  readonly multiProcess: boolean;
  /** `signal` cancels a server-side wait. */
  readonly abort: boolean;
  /** `statementCount()` counts statements sent to the server. */
  readonly countsStatements: boolean;
  /** The adapter offers session locks (it can pin a connection). */
  readonly session: boolean;
  /**
   * Where a session lock's connection comes from: `'pooled'` (checked out of the instance's pool
   * and handed back on release; the default) or `'own'` (opened for the lock, closed on release).
   */
  readonly sessionConnection?: 'pooled' | 'own' | undefined;
  /**
   * A statement that fails inside a nested call is rolled back to pglock's savepoint and the outer
   * transaction goes on. Default true; false where the ORM rolls its whole transaction back on any
   * failed statement (Drizzle on postgres.js: `sql.begin`), which the adapter's README states.
   */
  readonly nestedFailureRecovers?: boolean | undefined;
  /**
   * A transaction whose backend is terminated mid-wait rejects, and the process goes on. Default true;
   * false where the driver throws from a timer when the ORM then writes its ROLLBACK to the closed
   * connection, and leaves that transaction pending (postgres.js 3.4.9 under Kysely,
   * porsager/postgres#1208; docs/reliability.md).
   */
  readonly survivesTerminatedTransaction?: boolean | undefined;
  /**
   * The handle a callback gets is the pooled driver client itself (node-postgres), which serves the
   * next caller once the transaction ends: pglock tells a late call on it from that caller's only
   * through the lock context. Default false: the handle is the callback's alone, and a lock call on
   * it after the callback settled is refused however late it comes (the port's
   * `reusesTransactionHandle`).
   */
  readonly pooledTransactionHandle?: boolean | undefined;
  /**
   * One instance runs several lock calls at once (it has a pool). Default true; false for an
   * instance over one client, which runs one transaction at a time (in-process queue and
   * pool-exhaustion suites skip).
   */
  readonly concurrentCalls?: boolean | undefined;
  /**
   * Connections of a pool of its own beside the instance's database that the harness gives the
   * adapter (Kysely's `control` instance, a pool of two): a fixed cost of the process, whatever the
   * number of locks, which the connection-economy suite allows on top of its bound. Default 0.
   */
  readonly sideConnections?: number | undefined;
  /**
   * The `transaction: { … }` settings the adapter applies (its port's `transactionSettings`); the
   * transaction-settings suite checks each and expects the others refused. Default: `isolationLevel`.
   */
  readonly transactionSettings?: readonly TransactionSettingName[] | undefined;
}

/** A transaction opened with the adapter's own transaction API, with the adapter's lock/tryLock bound to it. */
export interface HarnessTransaction {
  readonly sql: Sql;
  /** The ORM's own transaction handle (what `locksOn` and the factory's `lock(tx, …)` take). */
  readonly handle?: unknown;
  lock(target: LockTarget, options?: LockOptions): Promise<void>;
  tryLock(target: LockTarget, options?: LockOptions): Promise<boolean>;
}

/** The verbs of an adapter's factory, as the kit drives them (`Tx` erased). */
export type AnyLocks = AdvisoryLocks<unknown, never> & Partial<SessionAdvisoryLocks>;

/** One "app instance": the adapter over its own pool or client. */
export interface AdapterInstance {
  withLock<T>(target: LockTarget, fn: (sql: Sql) => Promise<T>, options?: WithLockOptions): Promise<T>;
  tryWithLock<T>(
    target: LockTarget,
    fn: (sql: Sql) => Promise<T>,
    options?: WithLockOptions,
  ): Promise<TryResult<T>>;
  /** Opens a transaction with the ORM's own API (committed when `fn` resolves, rolled back when it throws). */
  transaction<T>(fn: (tx: HarnessTransaction) => Promise<T>): Promise<T>;
  isLocked(key: LockKeyInput, options?: Pick<LockOptions, 'namespace'>): Promise<boolean>;
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
  /** Session verbs, when the adapter has them (`capabilities.session`). */
  acquireSessionLock(target: LockTarget, options?: SessionLockOptions): Promise<SessionLock>;
  tryAcquireSessionLock(target: LockTarget, options?: SessionLockOptions): Promise<SessionLock | undefined>;
  /** The adapter's own factory over this instance's database, with these defaults. */
  advisoryLocks(defaults?: AdvisoryLocksOptions): AnyLocks;
  /** The adapter's factory over a transaction handle (what withLock's callback got). */
  locksOn(tx: unknown): AnyLocks;
  /** SQL on a transaction handle. */
  sqlOn(tx: unknown): Sql;
  /** The raw factory verbs (callbacks get the ORM's transaction). */
  readonly locks: AnyLocks;
  /**
   * The database handle the instance's factory is bound to (a pool, a client, an ORM database): a
   * handle that is not a transaction, for the misuse suite. `undefined` when the harness does not say.
   */
  readonly db?: unknown;
  /** Statements this instance has sent to the server so far (when `countsStatements`). */
  statementCount(): number;
  close(): Promise<void>;
}

/** How an instance is opened: the pool size, for pool-exhaustion suites. */
export interface OpenOptions {
  /** Most connections of the instance's pool (default 4). */
  readonly max?: number | undefined;
  /**
   * `true` (default): the harness listens for `'error'` on its pool and clients, as the README tells
   * apps to. `false`: it adds no listener of its own, so a suite sees whether pglock's listeners
   * alone keep a terminated backend from becoming an unhandled `'error'` (a process crash).
   */
  readonly errorListeners?: boolean | undefined;
}

/**
 * The adapter package as apps import it: the suites that call every export (`verbs`) and compare the
 * exports with the documentation (`exports`) read it.
 */
export interface AdapterPackage {
  /** The package name, e.g. `@pglock/pg` (its row in docs/scheduling.md). */
  readonly name: string;
  /** Every runtime export: `import * as adapter from '@pglock/pg'`. */
  readonly exports: Readonly<Record<string, unknown>>;
  /** The package's README, whose marked export list the `exports` suite compares with `exports`. */
  readonly readme: URL;
  /**
   * The methods the adapter adds to a client (Prisma's extension: `$withLock`, …), called on the
   * instance's `db`. Read from the adapter itself, not written out, so a new one is met by the suites.
   */
  readonly clientMethods?: readonly string[] | undefined;
}

/** How the conformance suite drives one adapter (one per adapter and driver). */
export interface AdapterHarness {
  /** Shown in test names, e.g. `pg (Pool)` or `drizzle (postgres.js)`. */
  readonly name: string;
  readonly capabilities: Capabilities;
  /** The adapter package (the `verbs` and `exports` suites skip without it, saying so). */
  readonly package?: AdapterPackage | undefined;
  /**
   * Absolute file URL of a module exporting this harness as `exportName`: child processes import it
   * to open their own instance (separate-process suites).
   */
  readonly moduleUrl: string;
  readonly exportName: string;
  open(url: string, options?: OpenOptions): Promise<AdapterInstance>;
}

/** What an adapter's harness supplies for one instance: its database and the few ORM-specific calls. */
export interface HarnessSetup<Tx> {
  /** The adapter's `advisoryLocks` over this instance's database, with `defaults`. */
  advisoryLocks(defaults?: AdvisoryLocksOptions): AdvisoryLocks<Tx, never> & Partial<SessionAdvisoryLocks>;
  /** The adapter's `advisoryLocks` over a transaction handle. */
  locksOn(tx: Tx): AdvisoryLocks<Tx, never>;
  /** Runs SQL on a transaction handle. */
  sql(tx: Tx): Sql;
  /** The database handle given to `advisoryLocks` (a pool, a client, the ORM's database), for misuse tests. */
  readonly db?: unknown;
  /** The ORM's own transaction API. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  statementCount?(): number;
  close(): Promise<void>;
}

/**
 * A harness from the few lines an adapter writes: how to open its database for a URL, and the
 * ORM-specific calls; the kit builds the rest the same way for every adapter.
 *
 * @example
 * ```ts
 * import { defineHarness } from '@pglock/test-kit';
 *
 * export const poolHarness = defineHarness({
 *   name: 'pg (Pool)', capabilities, moduleUrl: import.meta.url, exportName: 'poolHarness',
 *   async open(url, { max }) { const pool = new pg.Pool({ connectionString: url, max }); return { … }; },
 * });
 * ```
 */
export function defineHarness<Tx>(definition: {
  readonly name: string;
  readonly capabilities: Capabilities;
  readonly package?: AdapterPackage | undefined;
  readonly moduleUrl: string;
  readonly exportName: string;
  /** `errorListeners: false`: add no `'error'` listener of the harness's own (see {@link OpenOptions}). */
  open(
    url: string,
    options: { readonly max: number; readonly errorListeners: boolean },
  ): Promise<HarnessSetup<Tx>>;
}): AdapterHarness {
  return {
    name: definition.name,
    capabilities: definition.capabilities,
    package: definition.package,
    moduleUrl: definition.moduleUrl,
    exportName: definition.exportName,
    async open(url, options = {}) {
      const setup = await definition.open(url, {
        max: options.max ?? 4,
        errorListeners: options.errorListeners ?? true,
      });
      const locks = setup.advisoryLocks();
      const session = (verb: 'acquireSessionLock' | 'tryAcquireSessionLock') => {
        const fn = locks[verb];
        if (fn === undefined) throw new Error(`${definition.name} has no ${verb}`);
        return fn;
      };
      return {
        withLock: (target, fn, options) => locks.withLock(target, (tx) => fn(setup.sql(tx)), options),
        tryWithLock: (target, fn, options) => locks.tryWithLock(target, (tx) => fn(setup.sql(tx)), options),
        transaction: (fn) =>
          setup.transaction((tx) =>
            fn({
              sql: setup.sql(tx),
              handle: tx,
              lock: (target, options) => locks.lock(tx as never, target, options),
              tryLock: (target, options) => locks.tryLock(tx as never, target, options),
            }),
          ),
        isLocked: (key, options) => locks.isLocked(key, options),
        inspectLocks: () => locks.inspectLocks(),
        acquireSessionLock: (target, options) =>
          session('acquireSessionLock')(target, options) as Promise<SessionLock>,
        tryAcquireSessionLock: (target, options) => session('tryAcquireSessionLock')(target, options),
        advisoryLocks: (defaults) => setup.advisoryLocks(defaults) as AnyLocks,
        locksOn: (tx) => setup.locksOn(tx as Tx) as AnyLocks,
        sqlOn: (tx) => setup.sql(tx as Tx),
        locks: locks as AnyLocks,
        db: setup.db,
        statementCount: () => setup.statementCount?.() ?? 0,
        close: () => setup.close(),
      };
    },
  };
}
