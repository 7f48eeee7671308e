import type { AdvisoryLockInfo, LockKeyInput, LockOptions, LockTarget, TryResult } from '@pglock/core';

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
}

/** A transaction opened with the adapter's own transaction API, with the adapter's lock/tryLock bound to it. */
export interface HarnessTransaction {
  readonly sql: Sql;
  lock(target: LockTarget, options?: LockOptions): Promise<void>;
  tryLock(target: LockTarget, options?: LockOptions): Promise<boolean>;
}

/** One "app instance": the adapter over its own pool or client. */
export interface AdapterInstance {
  withLock<T>(target: LockTarget, fn: (sql: Sql) => Promise<T>, options?: LockOptions): Promise<T>;
  tryWithLock<T>(
    target: LockTarget,
    fn: (sql: Sql) => Promise<T>,
    options?: LockOptions,
  ): Promise<TryResult<T>>;
  /** Opens a transaction with the ORM's own API (committed when `fn` resolves, rolled back when it throws). */
  transaction<T>(fn: (tx: HarnessTransaction) => Promise<T>): Promise<T>;
  isLocked(key: LockKeyInput, options?: Pick<LockOptions, 'namespace'>): Promise<boolean>;
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
  /** Statements this instance has sent to the server so far (when `countsStatements`). */
  statementCount(): number;
  close(): Promise<void>;
}

/** How the conformance suite drives one adapter (one per adapter and driver). */
export interface AdapterHarness {
  /** Shown in test names, e.g. `pg (Pool)` or `drizzle (postgres.js)`. */
  readonly name: string;
  readonly capabilities: Capabilities;
  /**
   * Absolute file URL of a module exporting this harness as `exportName`: child processes import it
   * to open their own instance (separate-process suites).
   */
  readonly moduleUrl: string;
  readonly exportName: string;
  open(url: string): Promise<AdapterInstance>;
}
