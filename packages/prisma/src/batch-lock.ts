import { InvalidLockOptionsError, type LockOptions, type LockTarget, LockUsageError } from '@pglock/core';
import { batchLockError, batchLockStatement, lockRequest } from '@pglock/core/adapter';
import type { PrismaPromise } from '@prisma/client/runtime/client';
import { isTransactionClient } from './prisma-port.ts';
import type { PrismaBatchLockOptions, PrismaRawQueryable } from './prisma-types.ts';

/** What Prisma hands each element of `$transaction([…])`: the batch it joins, and its place in it. */
interface BatchTransaction {
  readonly kind: string;
  readonly index?: number;
  /** The batch's `timeout` (Prisma 7.9+; older versions use the client's and do not pass it). */
  readonly timeout?: unknown;
}

/** A Prisma promise as `$transaction([…])` drives it (lazy: nothing runs until then/requestTransaction). */
interface LazyPrismaPromise<T> extends PrismaPromise<T> {
  requestTransaction?(transaction: BatchTransaction): PromiseLike<unknown>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `$lock`: a transaction-scoped lock as an element of `$transaction([…])`. Its one statement comes from
 * core (every key, both lock spaces, one budget, and an error when not granted in time, so the batch
 * rolls back rather than run unlocked); its wait is added to the batch's `timeout`, which Prisma
 * takes from the batch's first element (7.9+); the element's failure becomes pglock's typed error,
 * which `$transaction` rejects with. Awaited alone on a transaction client it is `lock(tx, …)`;
 * awaited on a root client it would lock nothing (autocommit) and rejects with `LockUsageError`.
 */
export function batchLock(
  client: PrismaRawQueryable,
  target: LockTarget,
  options: PrismaBatchLockOptions | undefined,
  /** The extension's defaults, `timeoutMs` always set (a Prisma transaction never waits without limit). */
  defaults: LockOptions & { readonly timeoutMs: number },
  inTransaction: (tx: PrismaRawQueryable) => Promise<void>,
): PrismaPromise<void> {
  const request = lockRequest(target, options, defaults, '$lock');
  if (request.signal !== undefined) {
    throw new InvalidLockOptionsError(
      '$lock: signal cannot be honoured in a batch transaction (pglock sends no statement of its own there to cancel with); use timeoutMs, or $withLock.',
    );
  }
  const waitMs = request.timeoutMs ?? defaults.timeoutMs;
  let alone: Promise<void> | undefined;
  const awaited = (): Promise<void> => {
    alone ??= isTransactionClient(client)
      ? inTransaction(client)
      : Promise.reject(
          new LockUsageError(
            '$lock: outside a transaction a transaction-scoped lock is released as soon as its statement ends. Pass it as the first element of prisma.$transaction([prisma.$lock(…), …]), or await tx.$lock(…) inside an interactive transaction.',
            { keys: request.keys },
          ),
        );
    return alone;
  };
  const promise: LazyPrismaPromise<void> = {
    // biome-ignore lint/suspicious/noThenProperty: a Prisma promise is a lazy thenable by design.
    then: (resolve, reject) => awaited().then(resolve, reject),
    catch: (reject) => awaited().catch(reject),
    finally: (done) => awaited().finally(done),
    requestTransaction(transaction) {
      const s = batchLockStatement(request.keys, request.shared, waitMs);
      const raw = client.$queryRawUnsafe(s.text, ...s.values) as LazyPrismaPromise<unknown>;
      const { timeout } = transaction;
      const joined =
        typeof timeout === 'number'
          ? { ...transaction, timeout: Math.min(MAX_TIMER_MS, timeout + waitMs) }
          : transaction;
      return Promise.resolve(raw.requestTransaction?.(joined) ?? raw).then(
        () => undefined,
        (error: { batchRequestIdx?: unknown }) => {
          // Another element's failure (it names its own index) reaches every element: leave it be.
          if (typeof error?.batchRequestIdx === 'number' && error.batchRequestIdx !== transaction.index)
            throw error;
          throw batchLockError(request, error, '$lock');
        },
      );
    },
    [Symbol.toStringTag]: 'PrismaPromise',
  };
  return promise;
}
