import { InvalidLockOptionsError, type LockOptions, type LockTarget, LockUsageError } from '@pglock/core';
import { type LockRequest, lockRequest, MAX_DURATION_MS, sendBatchLock } from '@pglock/core/internal';
import type { PrismaPromise } from '@prisma/client/runtime/client';
import { IN_TRANSACTION_WAIT_MS, isTransactionClient } from './prisma-port.ts';
import type { PrismaRawQueryable } from './prisma-types.ts';

/**
 * A Prisma promise as `$transaction([…])` drives it (lazy: nothing runs until then/requestTransaction).
 * Each element is handed the batch it joins; Prisma 7.9+ puts the batch's `timeout` there and opens
 * the batch with its first element's, older versions give every batch the client's.
 */
interface LazyPrismaPromise<T> extends PrismaPromise<T> {
  requestTransaction?(batch: { readonly timeout?: unknown }): PromiseLike<unknown>;
}

/**
 * `$lock`: a transaction-scoped lock as an element of `$transaction([…])`. Its one statement comes from
 * core (every key, both lock spaces, one budget, and an error when not granted in time, so the batch
 * rolls back rather than run unlocked); its wait is added to the batch's `timeout`; a failure of the
 * statement becomes pglock's typed error, which `$transaction` rejects with. Awaited alone on a
 * transaction client it is `lock(tx, …)`; on a root client it would lock nothing (autocommit) and
 * rejects with `LockUsageError`. It waits 2500 ms unless `timeoutMs` is set: a Prisma lock never waits without limit.
 * Bad input never throws from `$lock(…)` itself: awaited, the promise rejects with the typed error;
 * in a batch, it is thrown as Prisma asks the element to join, before anything is sent.
 */
export function batchLock(
  client: PrismaRawQueryable,
  target: LockTarget,
  options: LockOptions | undefined,
  defaults: LockOptions,
  inTransaction: (tx: PrismaRawQueryable) => Promise<void>,
): PrismaPromise<undefined> {
  let request: LockRequest;
  try {
    request = batchLockRequest(target, options, defaults, IN_TRANSACTION_WAIT_MS, '$lock', '$withLock');
  } catch (error) {
    return refusedElement(error);
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
      const t = batch.timeout;
      // Prisma's timer is a setTimeout, which fires at once above a signed 32-bit millisecond count.
      const joined =
        typeof t === 'number' ? { ...batch, timeout: Math.min(MAX_DURATION_MS, t + waitMs) } : batch;
      return sendBatchLock(
        request,
        (s) => {
          const raw = client.$queryRawUnsafe(s.text, ...s.values) as LazyPrismaPromise<unknown>;
          return raw.requestTransaction?.(joined) ?? raw;
        },
        '$lock',
      );
    },
    [Symbol.toStringTag]: 'PrismaPromise',
  };
  return promise;
}

/**
 * The element of a `$lock` whose keys or options were refused. Awaited, it rejects with the error.
 * Asked to join a batch, it throws it: Prisma asks the batch's elements in order, so the throw stops
 * it before it asks the ones after the lock, and nothing of the batch is sent or left waiting
 * (`$transaction([…])` throws the typed error). A rejection would let Prisma go on and ask them: 7.10
 * then holds them, unsent, until every element has joined, which a refused one never does; pglock
 * does not lean on that for a lock that guards the batch.
 */
function refusedElement(error: unknown): PrismaPromise<undefined> {
  let rejected: Promise<undefined> | undefined;
  const awaited = () => {
    rejected ??= Promise.reject(error);
    return rejected;
  };
  const element: LazyPrismaPromise<undefined> = {
    // biome-ignore lint/suspicious/noThenProperty: a Prisma promise is a lazy thenable by design.
    then: (resolve, reject) => awaited().then(resolve, reject),
    catch: (reject) => awaited().catch(reject),
    finally: (done) => awaited().finally(done),
    requestTransaction() {
      throw error;
    },
    [Symbol.toStringTag]: 'PrismaPromise',
  };
  return element;
}

/**
 * The request of a lock sent as one statement of a batch transaction: `options` over the factory's
 * `defaults` (their transaction settings do not apply), waiting `defaultTimeoutMs` when neither sets
 * `timeoutMs` (the batch's transaction has a timer: it never waits without limit). A `signal` is
 * refused: pglock sends no statement of its own there to cancel with; `instead` names the verb
 * that can honour one.
 *
 * @example
 * ```ts
 * import { batchLockRequest } from './batch-lock.ts';
 *
 * const request = batchLockRequest('account:1', { timeoutMs: 500 }, {}, 2_500, '$lock', '$withLock');
 * ```
 */
export function batchLockRequest(
  target: LockTarget,
  options: LockOptions | undefined,
  defaults: LockOptions & { readonly transaction?: unknown },
  defaultTimeoutMs: number,
  verb: string,
  instead: string,
): LockRequest {
  if ((options as { readonly transaction?: unknown } | undefined)?.transaction !== undefined) {
    throw new InvalidLockOptionsError(
      `${verb}: transaction settings cannot apply here: the batch's transaction is opened by the ORM. Pass them to the batch itself (prisma.$transaction([…], { isolationLevel })), or use ${instead}.`,
    );
  }
  const { transaction: _settings, ...lockDefaults } = defaults;
  const timeoutMs = lockDefaults.timeoutMs ?? defaultTimeoutMs;
  const request = lockRequest(target, options, { ...lockDefaults, timeoutMs }, verb);
  if (request.signal !== undefined) {
    throw new InvalidLockOptionsError(
      `${verb}: signal cannot be honoured in a batch transaction (pglock sends no statement of its own there to cancel with); use timeoutMs, or ${instead}.`,
    );
  }
  return request;
}
