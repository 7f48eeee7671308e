/**
 * One `'abort'` listener per signal, however many waits share it: a signal shared by a shutdown
 * path across dozens of lock calls would otherwise pass Node's 10-listener warning
 * (`MaxListenersExceededWarning`), and each call would leave a listener behind until it settled.
 */
const registry = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `listener` once when `signal` aborts (at once when it already has); returns the unsubscribe.
 *
 * @example
 * ```ts
 * import { onAbort } from './abort-listeners.ts';
 *
 * const stop = onAbort(AbortSignal.timeout(1_000), () => console.log('aborted'));
 * stop();
 * ```
 */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => undefined;
  }
  let listeners = registry.get(signal);
  if (listeners === undefined) {
    const set = new Set<() => void>();
    listeners = set;
    registry.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        registry.delete(signal);
        for (const fn of [...set]) fn();
        set.clear();
      },
      { once: true },
    );
  }
  const set = listeners;
  let called = false;
  const once = (): void => {
    if (called) return;
    called = true;
    listener();
  };
  set.add(once);
  return () => {
    set.delete(once);
  };
}
