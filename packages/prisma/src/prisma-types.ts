import type { AdvisoryLocksOptions, LockOptions, TransactionSettings, WithLockOptions } from '@pglock/core';
import type { ITXClientDenyList } from '@prisma/client/runtime/client';

// The slices of Prisma Client this adapter calls, typed by those members alone (as Kysely's
// `PostgresPool` is), so that any generated client, with or without other extensions, fits.

/**
 * Anything that runs raw SQL: a Prisma client or a transaction client.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/prisma';
 *
 * await isLocked(prisma, 'job'); // or isLocked(tx, 'job') inside a transaction
 * ```
 */
export interface PrismaRawQueryable {
  $queryRawUnsafe(query: string, ...values: unknown[]): PromiseLike<unknown>;
}

/**
 * A transaction client: the `tx` of `prisma.$transaction(async (tx) => …)`, which runs every query on
 * the transaction's one connection. Prisma removes `$connect` from it; a root client, whose queries
 * may each run on another pooled connection, has it and is refused here at compile time.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => lock(tx, 'job')); // lock(prisma, 'job') does not compile
 * ```
 */
export interface PrismaTransactionLike extends PrismaRawQueryable {
  readonly $connect?: never;
}

/**
 * A root Prisma client (`new PrismaClient(…)`, or one returned by `$extends`).
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/prisma';
 *
 * await withLock(new PrismaClient({ adapter }), 'job', async (tx) => tx.job.deleteMany());
 * ```
 */
export interface PrismaClientLike extends PrismaRawQueryable {
  $connect(): Promise<void>;
  // Not generic: a generic member here would not match Prisma's overloaded `$transaction`.
  $transaction(
    fn: (tx: PrismaTransactionLike) => Promise<unknown>,
    options?: TransactionOptions,
  ): Promise<unknown>;
}

type TransactionOptions = {
  maxWait?: number | undefined;
  timeout?: number;
  isolationLevel?: string | undefined;
};

/**
 * The transaction client `prisma.$transaction` hands its callback: the client's own type, models and
 * other extensions included, without the members Prisma denies inside a transaction. Type helpers
 * that take `tx` with it: `Prisma.TransactionClient` is the unextended client's and does not fit an
 * extended one.
 *
 * @example
 * ```ts
 * import type { TxOf } from '@pglock/prisma';
 *
 * async function debit(tx: TxOf<typeof prisma>, id: number): Promise<void> {
 *   await tx.account.update({ where: { id }, data: { balance: { decrement: 10 } } });
 * }
 * ```
 */
export type TxOf<C> = Omit<C, ITXClientDenyList>;

/**
 * The `transaction: { … }` settings Prisma applies: `isolationLevel` (Prisma's or PostgreSQL's
 * names), `maxWait`, and `timeout`, the time the **callback** gets once the lock is held (the lock
 * wait is added to Prisma's own timeout). Unset, each is the client's own `transactionOptions`.
 *
 * @example
 * ```ts
 * import type { PrismaTransactionSettings } from '@pglock/prisma';
 *
 * const settings: PrismaTransactionSettings = { isolationLevel: 'Serializable', timeout: 10_000 };
 * ```
 */
export type PrismaTransactionSettings = Pick<TransactionSettings, 'isolationLevel' | 'maxWait' | 'timeout'>;

/**
 * Options of `$withLock` / `$tryWithLock` and `withLock` / `tryWithLock`.
 *
 * @example
 * ```ts
 * import type { PrismaWithLockOptions } from '@pglock/prisma';
 *
 * const options: PrismaWithLockOptions = { timeoutMs: 10_000, transaction: { timeout: 20_000 } };
 * ```
 */
export type PrismaWithLockOptions = WithLockOptions<PrismaTransactionSettings>;

/**
 * Defaults of the `advisoryLocks(…)` extension: every verb's options (`namespace` included).
 *
 * @example
 * ```ts
 * import type { PrismaLocksOptions } from '@pglock/prisma';
 *
 * const defaults: PrismaLocksOptions = { namespace: 'shop', transaction: { isolationLevel: 'Serializable' } };
 * ```
 */
export type PrismaLocksOptions = Omit<AdvisoryLocksOptions<PrismaTransactionSettings>, 'heartbeatMs'>;

/**
 * Options of `$lock`: no `signal` (in a batch transaction pglock sends no statement of its own to
 * cancel with; `timeoutMs` bounds the wait, 2500 ms by default).
 *
 * @example
 * ```ts
 * import type { PrismaBatchLockOptions } from '@pglock/prisma';
 *
 * const options: PrismaBatchLockOptions = { timeoutMs: 1_000, shared: true };
 * ```
 */
export type PrismaBatchLockOptions = Omit<LockOptions, 'signal'>;
