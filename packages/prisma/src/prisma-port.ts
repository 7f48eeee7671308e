import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidLockOptionsError } from '@pglock/core';
import type { LockPort, PortConnection, Row, Statement } from '@pglock/core/adapter';
import type { PrismaClientLike, PrismaRawQueryable, PrismaTransactionLike } from './prisma-types.ts';

/** How long `lock(tx, …)`, a nested `withLock` and `$lock` wait when `timeoutMs` is omitted. */
export const IN_TRANSACTION_WAIT_MS = 2_500;

// Prisma arms its transaction timer with setTimeout, which fires at once (after a warning) above a
// signed 32-bit millisecond count: the transaction would expire immediately.
const MAX_TIMER_MS = 2 ** 31 - 1;

// Prisma's names for PostgreSQL's isolation levels ('read committed' → 'ReadCommitted').
const LEVELS = ['ReadUncommitted', 'ReadCommitted', 'RepeatableRead', 'Serializable'] as const;
const prismaLevel = (level: string) => LEVELS.find((l) => l.toLowerCase() === level.replace(' ', ''));

/** The slice of a `pg.Pool` used here: its class and settings make a small pool of pglock's own. */
interface PgPoolSlice {
  readonly options?: object;
  readonly totalCount: number;
  connect(): Promise<{ release(): void }>;
  query(text: string, values: unknown[]): Promise<{ rows: Row[] }>;
  on(event: 'error', listener: () => void): unknown;
}

/**
 * The driver adapter factory Prisma 7 keeps at runtime (`new PrismaPg(…)`, none of it public API, so
 * read defensively): `externalPool` is the `pg.Pool` given to `PrismaPg`; given a config instead,
 * `PrismaPg` makes its pool out of reach, and `connect()` makes a new adapter with a new pool.
 */
interface AdapterFactory {
  readonly externalPool?: PgPoolSlice | null;
  connect?(): Promise<{ underlyingDriver?(): unknown; dispose?(): Promise<void> }>;
}

/** `new PrismaClient({ transactionOptions, adapter })`, as Prisma keeps them (defaults filled in). */
function internals(db: unknown): { transactionOptions?: { timeout?: unknown }; adapter?: AdapterFactory } {
  return (db as { _engineConfig?: object })._engineConfig ?? {};
}

/** The callback's share when the call sets no `transaction.timeout`: the client's own, else Prisma's 5 s. */
function clientTimeout(db: unknown): number {
  const timeout = internals(db).transactionOptions?.timeout;
  return typeof timeout === 'number' && Number.isInteger(timeout) && timeout > 0 ? timeout : 5_000;
}

// One small pool per adapter factory, for cancels: outside Prisma's pool (a cancel must work when
// every pooled connection waits), and never keeping the process alive (allowExitOnIdle).
const controlPools = new WeakMap<object, Promise<PgPoolSlice>>();

function controlPool(adapter: AdapterFactory): Promise<PgPoolSlice> {
  let pool = controlPools.get(adapter);
  if (pool === undefined) {
    pool = (async () => {
      const opened = adapter.externalPool ? undefined : await adapter.connect?.();
      const source = (adapter.externalPool ?? opened?.underlyingDriver?.()) as PgPoolSlice | undefined;
      await opened?.dispose?.();
      if (typeof source?.query !== 'function' || source.options === undefined) {
        throw new Error('no control connection: the driver adapter is not @prisma/adapter-pg');
      }
      const Pool = source.constructor as new (options: object) => PgPoolSlice;
      const own = new Pool({ ...source.options, max: 1, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
      own.on('error', () => undefined);
      return own;
    })();
    pool.catch(() => controlPools.delete(adapter));
    controlPools.set(adapter, pool);
  }
  return pool;
}

/**
 * True for an interactive transaction's client: Prisma removes `$connect` from it (in every Prisma 7
 * version), while a root client, extended or not, has it.
 */
export function isTransactionClient(handle: unknown): handle is PrismaTransactionLike {
  const client = handle as { $queryRawUnsafe?: unknown; $connect?: unknown } | null;
  return typeof client?.$queryRawUnsafe === 'function' && typeof client.$connect !== 'function';
}

async function rowsOf(db: PrismaRawQueryable, s: Statement): Promise<readonly Row[]> {
  return (await db.$queryRawUnsafe(s.text, ...s.values)) as Row[];
}

/** What the extension's query hook saw while a transaction's callback ran. */
type Watch = { failed: boolean; readonly unscoped: number };
type Operation<A> = { readonly args: A; query(args: A): PromiseLike<unknown> };

const watches = new AsyncLocalStorage<Watch>();
// Failed operations seen outside any watched callback: each makes every running transaction check.
let unscopedFailures = 0;

/**
 * The extension's `query.$allOperations`: notes that an operation failed, in the transaction whose
 * callback it ran in. Prisma says neither that a statement failed in an interactive transaction nor
 * that PostgreSQL answered its COMMIT with ROLLBACK; with this, core asks PostgreSQL (`SELECT 1`
 * before the commit) only when something failed.
 */
export async function watchOperation<A>({ args, query }: Operation<A>) {
  try {
    return await query(args);
  } catch (error) {
    const watch = watches.getStore();
    if (watch) watch.failed = true;
    else unscopedFailures++;
    throw error;
  }
}

function connectionFor(tx: PrismaRawQueryable, watch?: Watch): PortConnection {
  const status = () =>
    watch?.failed === false && watch.unscoped === unscopedFailures ? 'transaction' : undefined;
  return { query: (s) => rowsOf(tx, s), transactionStatus: status };
}

/**
 * pglock's port for Prisma 7: a transaction is `prisma.$transaction(async (tx) => …)` whose timeout is
 * the lock wait plus the callback's share; a wait is cancelled by backend pid from a pool of its own
 * with the settings of the `pg.Pool` behind `@prisma/adapter-pg`. No session locks: outside an
 * interactive transaction Prisma pins no connection. `watched`: the client has the extension's hook.
 */
function portFor(watched: boolean): LockPort<PrismaRawQueryable, PrismaTransactionLike> {
  return {
    name: '@pglock/prisma',
    transactionSettings: ['isolationLevel', 'maxWait', 'timeout'],
    connectionOf: (handle) => (isTransactionClient(handle) ? connectionFor(handle) : undefined),
    transaction(db, { settings, waitMs }, body) {
      const callbackMs = settings.timeout ?? clientTimeout(db);
      const timeout = (waitMs ?? 0) + callbackMs;
      if (timeout > MAX_TIMER_MS) {
        throw new InvalidLockOptionsError(
          `withLock: timeoutMs (${waitMs}) plus the callback's transaction.timeout (${callbackMs}) is ${timeout} ms, above the ${MAX_TIMER_MS} ms a Prisma transaction can last; lower timeoutMs.`,
        );
      }
      const { isolationLevel, maxWait } = settings;
      const run = (tx: PrismaTransactionLike) => {
        if (!watched) return body(tx, connectionFor(tx));
        const watch = { failed: false, unscoped: unscopedFailures };
        return watches.run(watch, body, tx, connectionFor(tx, watch));
      };
      const level = isolationLevel && prismaLevel(isolationLevel);
      return (db as PrismaClientLike).$transaction(run, {
        timeout,
        maxWait,
        isolationLevel: level,
      }) as Promise<never>;
    },
    query: rowsOf,
    cancellation(db) {
      const adapter = internals(db).adapter;
      if (typeof adapter?.connect !== 'function') return 'none';
      // Asked once per call with a signal, before it waits: connect the control pool now, so that an
      // abort needs no connection setup.
      controlPool(adapter)
        .then(async (pool) => pool.totalCount === 0 && (await pool.connect()).release())
        .catch(() => undefined);
      return 'control';
    },
    async controlConnection(db) {
      const pool = await controlPool(internals(db).adapter ?? {});
      return { query: async (s) => (await pool.query(s.text, [...s.values])).rows, release: () => undefined };
    },
    defaultTimeoutMs: (verb, settings, db) =>
      verb === 'lock' ? IN_TRANSACTION_WAIT_MS : (settings.timeout ?? clientTimeout(db)),
  };
}

/** The port of the plain functions: the client may lack the extension's hook, so core always checks. */
export const prismaPort = portFor(false);

/** The port of the extension's methods, whose client has {@link watchOperation}. */
export const watchedPrismaPort = portFor(true);
