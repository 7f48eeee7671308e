import { onAbort } from './abort-listeners.ts';
import type { LockRequest } from './lock-options.ts';
import { abortedError } from './messages.ts';

/**
 * The time before a pglock transaction's body runs (the pool's wait for a connection, the ORM's
 * BEGIN) bounded by the caller's `timeoutMs` and `signal`. Neither is a lock wait, but the caller was
 * promised an answer in time whatever the pool does: a pool that is exhausted, or one that never
 * hands a connection out again (postgres.js's `reserve()` after a terminated backend,
 * porsager/postgres#1195).
 */
export interface StartBound {
  /**
   * Called first thing in the body. False when the caller has already been answered: the body must
   * end at once (throw), so the ORM rolls back the transaction it opened too late.
   */
  enter(): boolean;
  /**
   * `running`, or the rejection made by `late()` or `aborted()` when the deadline passes or the
   * signal fires before the body was entered. A late outcome of `running` is observed: a value goes
   * to `onLate` (hand back a connection that arrived after the caller gave up on it), an error is
   * dropped.
   */
  wait<T>(running: Promise<T>, onLate?: (value: T) => void): Promise<T>;
}

/**
 * A {@link StartBound} for a call with a deadline (`performance.now()` time) or a signal;
 * `undefined` for a call with neither (it waits as long as the pool does, as the ORM would).
 *
 * @example
 * ```ts
 * import { startBound } from './start-bound.ts';
 *
 * const bound = startBound(performance.now() + 500, undefined, () => new Error('late'), () => new Error('aborted'));
 * const value = await bound?.wait(
 *   db.transaction(async (tx) => {
 *     if (!bound.enter()) throw new Error('the caller has gone');
 *     return 'work';
 *   }),
 * );
 * ```
 */
export function startBound(
  deadline: number | undefined,
  signal: AbortSignal | undefined,
  late: () => unknown,
  aborted: () => unknown,
): StartBound | undefined {
  if (deadline === undefined && signal === undefined) return undefined;
  let entered = false;
  let gaveUp = false;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const cleanup = () => {
    clearTimeout(timer);
    unsubscribe?.();
  };
  return {
    enter() {
      entered = true;
      cleanup();
      return !gaveUp;
    },
    wait<T>(running: Promise<T>, onLate?: (value: T) => void): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const giveUp = (error: () => unknown) => {
          if (entered || gaveUp) return;
          gaveUp = true;
          cleanup();
          reject(error());
        };
        running.then(
          (value) => {
            cleanup();
            if (!gaveUp) resolve(value);
            else onLate?.(value);
          },
          (error: unknown) => {
            cleanup();
            if (!gaveUp) reject(error);
          },
        );
        if (deadline !== undefined) {
          timer = setTimeout(() => giveUp(late), timerDelay(deadline));
        }
        if (signal !== undefined) unsubscribe = onAbort(signal, () => giveUp(aborted));
      });
    },
  };
}

/**
 * Whole milliseconds until `deadline`, rounded up (the timer never fires before it). Node keeps one
 * timer list per distinct delay: a fractional delay, different on every call, made a new list and a
 * priority-queue entry per call, and removed them again when the call was answered in time.
 */
export function timerDelay(deadline: number): number {
  return Math.max(0, Math.ceil(deadline - performance.now()));
}

/**
 * The {@link StartBound} of a lock call: its `deadline` and `request.signal`, the signal ending it
 * with the call's LockAbortedError and the deadline with what `late()` makes. `undefined` for a
 * call with neither (most calls: no closures are built for them).
 *
 * @example
 * ```ts
 * import { requestBound } from './start-bound.ts';
 *
 * const bound = requestBound(request, 'acquireSessionLock', performance.now() + 500, () => new Error('late'));
 * const connection = bound === undefined ? await pinning : await bound.wait(pinning);
 * ```
 */
export function requestBound(
  request: LockRequest,
  verb: string,
  deadline: number | undefined,
  late: () => unknown,
): StartBound | undefined {
  if (deadline === undefined && request.signal === undefined) return undefined;
  return startBound(deadline, request.signal, late, () =>
    abortedError(request, verb, request.signal?.reason),
  );
}
