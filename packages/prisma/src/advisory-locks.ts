import type * as core from '@pglock/core';
import { lockFunctions, lockVerbs } from '@pglock/core/adapter';
import { Prisma } from '@prisma/client/extension';
import type { PrismaPromise } from '@prisma/client/runtime/client';
import { batchLock } from './batch-lock.ts';
import { prismaPort, watchedPrismaPort, watchOperation } from './prisma-port.ts';
import type {
  PrismaBatchLockOptions,
  PrismaClientLike,
  PrismaLocksOptions,
  PrismaRawQueryable,
  PrismaTransactionLike,
  PrismaTransactionSettings,
  PrismaWithLockOptions,
  TxOf,
} from './prisma-types.ts';

type Callback<C, R> = (tx: TxOf<C>) => Promise<R>;
type Untyped<R> = (tx: unknown) => Promise<R>;
type Options = PrismaWithLockOptions;
type RunOnceOptions = core.RunOnceOptions<Settings>;
type Job<C, R> = (tx: TxOf<C>, run: core.RunOnceContext) => Promise<R>;
type UntypedJob<R> = (tx: unknown, run: core.RunOnceContext) => Promise<R>;

type Db = PrismaRawQueryable;
type Settings = PrismaTransactionSettings;
const functions = lockFunctions<Db, unknown, PrismaTransactionLike, Settings>(prismaPort);
// The extension's verbs go by Prisma's idiom, and their messages by the names its users call.
const NAMES = { withLock: '$withLock', tryWithLock: '$tryWithLock', runOnce: '$runOnce', lock: '$lock' };

/**
 * A Prisma Client extension (named `pglock`) adding `$withLock`, `$tryWithLock`, `$lock` and
 * `$runOnce`, over transaction-scoped advisory locks: a lock lives and dies with its transaction. `defaults` apply to
 * every call (per-call options win; `$tryWithLock` tries once unless the call sets `timeoutMs`).
 * Inside a running `$withLock` callback, or on a transaction client (`tx.$withLock`), a call nests
 * with a savepoint on that transaction.
 *
 * @example
 * ```ts
 * import { advisoryLocks } from '@pglock/prisma';
 *
 * const prisma = new PrismaClient({ adapter }).$extends(advisoryLocks({ namespace: 'shop' }));
 * await prisma.$withLock(`user:${id}`, async (tx) => {
 *   const user = await tx.user.findUniqueOrThrow({ where: { id } });
 *   await tx.user.update({ where: { id }, data: { score: user.score + points } });
 * });
 * await prisma.$transaction([prisma.$lock(`user:${id}`), prisma.user.update({ where: { id }, data: { score: 0 } })]);
 * ```
 */
export function advisoryLocks(defaults: PrismaLocksOptions = {}) {
  // Bad defaults fail here, where the extension is made.
  const verbs = lockVerbs(watchedPrismaPort, defaults, NAMES);
  const locksOf = (client: unknown) => verbs(client as Db);
  return Prisma.defineExtension({
    name: 'pglock',
    query: { $allOperations: watchOperation },
    client: {
      /** Runs `fn(tx)` in `$transaction` after taking the lock; resolves its value. */
      $withLock<C, R>(this: C, target: core.LockTarget, fn: Callback<C, R>, options?: Options): Promise<R> {
        return locksOf(Prisma.getExtensionContext(this)).withLock(target, fn as Untyped<R>, options);
      },
      /** Like `$withLock`, resolving `{ acquired: false }` when the lock is taken. */
      $tryWithLock<C, R>(
        this: C,
        target: core.LockTarget,
        fn: Callback<C, R>,
        options?: Options,
      ): Promise<core.TryResult<R>> {
        return locksOf(Prisma.getExtensionContext(this)).tryWithLock(target, fn as Untyped<R>, options);
      },
      /**
       * Runs `fn(tx, { period, missed, signal, attempt })` at most once per period across every instance (see
       * `runOnce`); `'too-soon'` (`'failed'`) is in the result's type only when `options` may carry `minIntervalMs` (`retry`).
       */
      $runOnce<C, R, O extends RunOnceOptions>(
        this: C,
        name: string,
        options: O,
        fn: Job<C, R>,
      ): Promise<core.RunOnceResult<R, core.RunOnceReasonOf<O>>> {
        return locksOf(Prisma.getExtensionContext(this)).runOnce(
          name,
          options as RunOnceOptions,
          fn as UntypedJob<R>,
        ) as Promise<core.RunOnceResult<R, core.RunOnceReasonOf<O>>>;
      },
      /** The lock as the first element of `$transaction([…])` (or awaited on `tx`: `lock(tx, …)`). */
      $lock<C>(this: C, target: core.LockTarget, options?: PrismaBatchLockOptions): PrismaPromise<undefined> {
        const client = Prisma.getExtensionContext(this) as unknown as Db;
        const inTransaction = (tx: Db) => locksOf(tx).lock(tx as PrismaTransactionLike, target, options);
        return batchLock(client, target, options, defaults, inTransaction);
      },
    },
  });
}

/**
 * Runs `fn(tx)` in `prisma.$transaction(async (tx) => …)` whose first statement takes the lock;
 * COMMIT (or ROLLBACK when `fn` throws) releases it. `timeoutMs` defaults to the callback's
 * `transaction.timeout` (the client's own, else 5000 ms): a Prisma transaction never waits without
 * limit. Given a transaction client, or inside a running callback on `prisma`, it nests with a savepoint.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/prisma';
 *
 * await withLock(prisma, `account:${id}`, async (tx) => {
 *   await tx.account.update({ where: { id }, data: { balance: { decrement: 10 } } });
 * });
 * ```
 */
export function withLock<C extends PrismaClientLike, T>(
  prisma: C,
  target: core.LockTarget,
  fn: Callback<C, T>,
  options?: Options,
): Promise<T> {
  return functions.withLock(prisma, target, fn as Untyped<T>, options);
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken. `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/prisma';
 *
 * const result = await tryWithLock(prisma, 'leaderboard', async (tx) => rebuild(tx));
 * if (!result.acquired) console.log('another instance is rebuilding');
 * ```
 */
export function tryWithLock<C extends PrismaClientLike, T>(
  prisma: C,
  target: core.LockTarget,
  fn: Callback<C, T>,
  options?: Options,
): Promise<core.TryResult<T>> {
  return functions.tryWithLock(prisma, target, fn as Untyped<T>, options);
}

/**
 * Takes a transaction-scoped lock inside `prisma.$transaction(async (tx) => …)`; held until that
 * transaction ends. `timeoutMs` defaults to 2500 ms (half of Prisma's default transaction timeout):
 * keep it below your transaction's `timeout`. The root client is a type error and `LockUsageError`.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => {
 *   await lock(tx, ['account:1', 'account:2'], { timeoutMs: 1_000 });
 *   // … transfer …
 * });
 * ```
 */
export const lock = functions.lock;

/**
 * Tries a transaction-scoped lock inside `prisma.$transaction(async (tx) => …)`: `true` when held
 * (until the transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => {
 *   if (await tryLock(tx, 'report')) await buildReport(tx);
 * });
 * ```
 */
export const tryLock = functions.tryLock;

/**
 * True when any session holds `key`: a snapshot, for dashboards and tests, not for deciding whether
 * to take a lock (use {@link tryWithLock} for that).
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/prisma';
 *
 * console.log(await isLocked(prisma, 'leaderboard'));
 * ```
 */
export const isLocked = functions.isLocked;

/**
 * Every advisory lock in the current database with holders and waiters (`pg_locks` joined with
 * `pg_stat_activity`).
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/prisma';
 *
 * console.table(await inspectLocks(prisma));
 * ```
 */
export const inspectLocks = functions.inspectLocks;

/**
 * Runs `fn(tx, { period, missed })` at most once per period (of `per`, or of `cron` in a `timeZone`)
 * across every instance: the job's writes and its "done for this period" record (table
 * `pglock_jobs`, DDL from `pglock schema`) commit together. Resolves
 * `{ ran: true, value, period, missed }` or `{ ran: false, reason: 'done' | 'busy' | 'too-soon', period }`.
 *
 * @example
 * ```ts
 * import { runOnce } from '@pglock/prisma';
 *
 * const run = await runOnce(prisma, 'rebuild-leaderboard', { per: '1h' }, async (tx) => rebuild(tx));
 * if (!run.ran) console.log(`skipped: ${run.reason}`);
 * ```
 */
export function runOnce<C extends PrismaClientLike, T>(
  prisma: C,
  name: string,
  options: RunOnceOptions,
  fn: Job<C, T>,
): Promise<core.RunOnceResult<T>> {
  return functions.runOnce(prisma, name, options, fn as UntypedJob<T>);
}

/**
 * Who leads `name` now, without campaigning: `{ term, since, identity, pid, application }` (the
 * term and identity from `pglock_jobs`, the lock holder's backend from `pg_locks` and
 * `pg_stat_activity`), or `undefined` when no session holds the name's lock. One statement, so it
 * works through a transaction-mode pooler too.
 *
 * @example
 * ```ts
 * import { currentLeader } from '@pglock/prisma';
 *
 * const now = await currentLeader(prisma, 'scheduler');
 * console.log(now === undefined ? 'nobody leads' : `term ${now.term}: ${now.identity} (pid ${now.pid})`);
 * ```
 */
export const currentLeader = functions.currentLeader;

/**
 * Calls `onChange(leader, previous)` once with who leads `name`, then on every new term and when
 * nobody leads any more, reading {@link currentLeader} every `pollMs` (default 1000) until `stop()`
 * (or `signal`). A failed reading goes to `onError`; bad options throw from the call.
 *
 * @example
 * ```ts
 * import { observeLeader } from '@pglock/prisma';
 *
 * await using observer = observeLeader(prisma, 'scheduler', {
 *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
 * });
 * ```
 */
export const observeLeader = functions.observeLeader;
