import type { ITXClientDenyList } from '@prisma/client/runtime/client';

/**
 * The slices of Prisma Client this adapter calls, typed by those members alone (as Kysely's
 * `PostgresPool` is), so that any generated client, with or without other extensions, fits.
 */

/**
 * Isolation levels Prisma accepts for a PostgreSQL interactive transaction.
 *
 * @example
 * ```ts
 * import type { PrismaIsolationLevel } from '@pglock/prisma';
 *
 * const level: PrismaIsolationLevel = 'Serializable';
 * ```
 */
export type PrismaIsolationLevel = 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';

/**
 * Options handed to Prisma's `$transaction`. `timeout` is what the callback gets once the lock is held
 * (Prisma's default 5000 ms); the lock wait is added to it (see the README's "Timeout budget").
 *
 * @example
 * ```ts
 * await prisma.$withLock('report', build, { timeoutMs: 30_000, transaction: { timeout: 60_000, maxWait: 5_000 } });
 * ```
 */
export interface PrismaTransactionOptions {
  /** Longest wait for a pooled connection before the transaction starts (Prisma's default 2000 ms). */
  readonly maxWait?: number | undefined;
  /** Longest time the callback may run after the lock is held (Prisma's default 5000 ms). */
  readonly timeout?: number | undefined;
  readonly isolationLevel?: PrismaIsolationLevel | undefined;
}

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
    options?: { maxWait?: number; timeout?: number; isolationLevel?: PrismaIsolationLevel },
  ): Promise<unknown>;
}

/**
 * The transaction client `prisma.$transaction` hands its callback: the client's own type, models and
 * other extensions included, without the members Prisma denies inside a transaction.
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
