import { type LockTarget, type TryResult, withDefaults } from '@pglock/core';
import { Prisma } from '@prisma/client/extension';
import type { PrismaClientLike, TxOf } from './prisma-types.ts';
import { type PrismaLockOptions, tryWithLock, withLock } from './with-lock.ts';

// Per-call options over the extension's defaults, with `transaction` merged field by field.
function merge(defaults: PrismaLockOptions, options: PrismaLockOptions | undefined): PrismaLockOptions {
  return {
    ...withDefaults(defaults, options),
    transaction: withDefaults(defaults.transaction ?? {}, options?.transaction),
  };
}

/**
 * A Prisma Client extension (named `pglock`) that adds `$withLock` and `$tryWithLock`: an interactive
 * transaction whose first statement takes a transaction-scoped advisory lock, so the lock lives and
 * dies with that transaction. `tx` in the callback is your client's own transaction client, models
 * and other extensions included. Per-call options override `defaults`; `$tryWithLock` tries once
 * unless the call itself sets `timeoutMs`.
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
 * const rebuilt = await prisma.$tryWithLock('leaderboard', rebuild);
 * if (!rebuilt.acquired) console.log('another instance is rebuilding');
 * ```
 */
export function advisoryLocks(defaults: PrismaLockOptions = {}) {
  const { timeoutMs: _wait, ...tryDefaults } = defaults;
  return Prisma.defineExtension({
    name: 'pglock',
    client: {
      /** Runs `fn` in `$transaction` after taking the lock; resolves its value. */
      $withLock<C, R>(
        this: C,
        target: LockTarget,
        fn: (tx: TxOf<C>) => Promise<R>,
        options?: PrismaLockOptions,
      ): Promise<R> {
        const client = Prisma.getExtensionContext(this) as unknown as PrismaClientLike;
        return withLock(client, target, (tx) => fn(tx as TxOf<C>), merge(defaults, options));
      },
      /** Like `$withLock`, resolving `{ acquired: false }` when the lock is taken. */
      $tryWithLock<C, R>(
        this: C,
        target: LockTarget,
        fn: (tx: TxOf<C>) => Promise<R>,
        options?: PrismaLockOptions,
      ): Promise<TryResult<R>> {
        const client = Prisma.getExtensionContext(this) as unknown as PrismaClientLike;
        return tryWithLock(client, target, (tx) => fn(tx as TxOf<C>), merge(tryDefaults, options));
      },
    },
  });
}
