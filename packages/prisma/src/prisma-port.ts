import type { IsolationLevel } from '@pglock/core';
import type { LockPort, PortConnection, Row, Statement } from '@pglock/core/adapter';
import { nodePostgresControlPool } from '@pglock/core/drivers/node-postgres';
import { checkDuration } from '@pglock/core/internal';
import { failureWatch } from './failure-watch.ts';
import type { PrismaClientLike, PrismaRawQueryable, PrismaTransactionLike } from './prisma-types.ts';

/** Prisma's names of PostgreSQL's isolation levels (`'read committed'` → `'ReadCommitted'`). */
const PRISMA_ISOLATION_LEVELS = {
  'read uncommitted': 'ReadUncommitted',
  'read committed': 'ReadCommitted',
  'repeatable read': 'RepeatableRead',
  serializable: 'Serializable',
} as const satisfies Record<IsolationLevel, string>;

/** How long `lock(tx, …)`, a nested `withLock` and `$lock` wait when `timeoutMs` is omitted. */
export const IN_TRANSACTION_WAIT_MS = 2_500;

/**
 * The driver adapter factory Prisma 7 keeps at runtime (`new PrismaPg(…)`, none of it public API, so
 * read defensively): `externalPool` is the `pg.Pool` given to `PrismaPg`; given a config instead,
 * `PrismaPg` makes its pool out of reach, and `connect()` makes a new adapter with a new pool.
 */
interface AdapterFactory {
  readonly externalPool?: object | null;
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

// One small pool per adapter factory, for cancels: core's control pool, with the settings of the
// `pg.Pool` behind it (reached by opening an adapter of its own when that pool is out of reach).
const controlPool = (adapter: AdapterFactory) =>
  nodePostgresControlPool(adapter, async () => {
    const opened = adapter.externalPool ? undefined : await adapter.connect?.();
    const source = adapter.externalPool ?? opened?.underlyingDriver?.();
    await opened?.dispose?.();
    return source;
  });

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

type Operation<A> = { readonly args: A; query(args: A): PromiseLike<unknown> };
const failures = failureWatch();

/**
 * The extension's `query.$allOperations`: notes that an operation failed, in the transaction whose
 * callback it ran in (Prisma says neither that a statement failed in an interactive transaction nor
 * that PostgreSQL answered its COMMIT with ROLLBACK).
 */
export const watchOperation = <A>({ args, query }: Operation<A>) => failures.observe(() => query(args));

// Unwatched, a transaction's status is unknown: core asks PostgreSQL before the commit.
const connectionFor = (tx: PrismaRawQueryable): PortConnection => ({ query: (s) => rowsOf(tx, s) });

/**
 * pglock's port for Prisma 7: a transaction is `prisma.$transaction(async (tx) => …)` whose timeout is
 * the lock wait plus the callback's share; a wait is cancelled by backend pid from a pool of its own
 * with the settings of the `pg.Pool` behind `@prisma/adapter-pg`. No session locks: outside an
 * interactive transaction Prisma pins no connection. `watched`: the client has the extension's hook.
 */
function portFor(watched: boolean): LockPort<PrismaRawQueryable, PrismaTransactionLike> {
  // Port messages name the verbs' family: the extension's methods, or the plain functions.
  const verb = watched ? '$withLock' : 'withLock';
  return {
    name: '@pglock/prisma',
    transactionSettings: ['isolationLevel', 'maxWait', 'timeout'],
    connectionOf: (handle) => (isTransactionClient(handle) ? connectionFor(handle) : undefined),
    transaction(db, { settings, waitMs }, body) {
      // Prisma arms its transaction timer with setTimeout, which fires at once (after a warning)
      // above a signed 32-bit millisecond count: the transaction would expire immediately.
      const timeout = (waitMs ?? 0) + (settings.timeout ?? clientTimeout(db));
      const what = `timeoutMs (${waitMs}) plus the callback's transaction.timeout`;
      checkDuration(timeout, what, verb, 1, 'a Prisma transaction cannot last longer: lower timeoutMs');
      const { isolationLevel, maxWait } = settings;
      const run = (tx: PrismaTransactionLike) => {
        if (!watched) return body(tx, connectionFor(tx));
        return failures.run(connectionFor(tx), (connection) => body(tx, connection));
      };
      // Prisma takes its own names for PostgreSQL's isolation levels ('ReadCommitted').
      const level = isolationLevel && PRISMA_ISOLATION_LEVELS[isolationLevel];
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
      controlPool(adapter).warm();
      return 'control';
    },
    controlConnection: (db) => controlPool(internals(db).adapter ?? {}).connection(),
    defaultTimeoutMs: (verb, settings, db) =>
      verb === 'lock' ? IN_TRANSACTION_WAIT_MS : (settings.timeout ?? clientTimeout(db)),
  };
}

/** The port of the plain functions: the client may lack the extension's hook, so core always checks. */
export const prismaPort = portFor(false);

/** The port of the extension's methods, whose client has {@link watchOperation}. */
export const watchedPrismaPort = portFor(true);
