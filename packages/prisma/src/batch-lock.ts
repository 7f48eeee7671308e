import { InvalidLockOptionsError, LockUsageError } from '@pglock/core';
import { batchLockError, batchLockStatement, type LockRequest, sqlStateOf } from '@pglock/core/adapter';
import type { PrismaPromise } from '@prisma/client/runtime/client';
import { isTransactionClient } from './prisma-port.ts';
import type { PrismaRawQueryable } from './prisma-types.ts';

/**
 * A Prisma promise as `$transaction([…])` drives it (lazy: nothing runs until then/requestTransaction).
 * Each element is handed the batch it joins; Prisma 7.9+ puts the batch's `timeout` there and opens
 * the batch with its first element's, older versions give every batch the client's.
 */
interface LazyPrismaPromise<T> extends PrismaPromise<T> {
  requestTransaction?(batch: { readonly timeout?: unknown }): PromiseLike<unknown>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `$lock`: a transaction-scoped lock as an element of `$transaction([…])`. Its one statement comes from
 * core (every key, both lock spaces, one budget, and an error when not granted in time, so the batch
 * rolls back rather than run unlocked); its wait is added to the batch's `timeout`; a failure of the
 * statement becomes pglock's typed error, which `$transaction` rejects with. Awaited alone on a
 * transaction client it is `lock(tx, …)`; on a root client it would lock nothing (autocommit) and
 * rejects with `LockUsageError`. `request.timeoutMs` is always set: a Prisma lock never waits without limit.
 */
export function batchLock(
  client: PrismaRawQueryable,
  request: LockRequest,
  inTransaction: (tx: PrismaRawQueryable) => Promise<void>,
): PrismaPromise<undefined> {
  if (request.signal !== undefined) {
    throw new InvalidLockOptionsError(
      '$lock: signal cannot be honoured in a batch transaction (pglock sends no statement of its own there to cancel with); use timeoutMs, or $withLock.',
    );
  }
  const waitMs = request.timeoutMs ?? 0;
  const misuse = () =>
    new LockUsageError(
      '$lock: outside a transaction a transaction-scoped lock is released as soon as its statement ends. Pass it as the first element of prisma.$transaction([prisma.$lock(…), …]), or await tx.$lock(…) inside an interactive transaction.',
      { keys: request.keys },
    );
  let alone: Promise<undefined> | undefined;
  const awaited = () => {
    alone ??= isTransactionClient(client)
      ? inTransaction(client).then(() => undefined)
      : Promise.reject(misuse());
    return alone;
  };
  const promise: LazyPrismaPromise<undefined> = {
    // biome-ignore lint/suspicious/noThenProperty: a Prisma promise is a lazy thenable by design.
    then: (resolve, reject) => awaited().then(resolve, reject),
    catch: (reject) => awaited().catch(reject),
    finally: (done) => awaited().finally(done),
    requestTransaction(batch) {
      const s = batchLockStatement(request.keys, request.shared, waitMs);
      const raw = client.$queryRawUnsafe(s.text, ...s.values) as LazyPrismaPromise<unknown>;
      const t = batch.timeout;
      const joined =
        typeof t === 'number' ? { ...batch, timeout: Math.min(MAX_TIMER_MS, t + waitMs) } : batch;
      // Only a statement's failure is the lock's; Prisma's own (its transaction's) stays as it is.
      return Promise.resolve(raw.requestTransaction?.(joined) ?? raw).then(
        () => undefined,
        (error: unknown) => {
          throw sqlStateOf(error) === undefined ? error : batchLockError(request, error, '$lock');
        },
      );
    },
    [Symbol.toStringTag]: 'PrismaPromise',
  };
  return promise;
}
