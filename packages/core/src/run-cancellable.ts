import { onAbort } from './abort-listeners.ts';
import type { PortConnection, Row } from './lock-port.ts';
import type { Statement } from './statement.ts';

/** What {@link runCancellable} saw: the rows, or the error, and whether the signal fired meanwhile. */
export type CancellableOutcome =
  | { readonly ok: true; readonly rows: readonly Row[]; readonly aborted: boolean }
  | { readonly ok: false; readonly error: unknown; readonly aborted: boolean };

const RETRY_FIRST_MS = 25;
const RETRY_MAX_MS = 1_000;

/**
 * Runs a statement that may wait, cancelling it on the server when `signal` fires. A cancel that
 * reaches the server before the statement has started is ignored there, so the cancel is repeated
 * (with backoff) until the statement settles; a cancel reaching an idle connection is ignored by
 * PostgreSQL, and the control-connection cancel only touches a backend waiting for an advisory lock,
 * so a late one is harmless.
 */
export async function runCancellable(
  connection: PortConnection,
  stmt: Statement,
  signal: AbortSignal | undefined,
  cancel: (() => Promise<void>) | undefined,
): Promise<CancellableOutcome> {
  if (signal === undefined || cancel === undefined) {
    try {
      return { ok: true, rows: await connection.query(stmt), aborted: false };
    } catch (error) {
      return { ok: false, error, aborted: false };
    }
  }
  if (signal.aborted) return { ok: false, error: signal.reason, aborted: true };

  let settled = false;
  let aborted = false;
  let cancelling: Promise<void> | undefined;
  // Ends the pause between two cancels once the statement settled: the call must not wait it out.
  let wake: (() => void) | undefined;
  const keepCancelling = async (): Promise<void> => {
    let delay = RETRY_FIRST_MS;
    while (!settled) {
      await cancel().catch(() => undefined);
      if (settled) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay).unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  };
  const unsubscribe = onAbort(signal, () => {
    aborted = true;
    cancelling = keepCancelling();
  });
  try {
    const rows = await connection.query(stmt);
    return { ok: true, rows, aborted };
  } catch (error) {
    return { ok: false, error, aborted };
  } finally {
    settled = true;
    unsubscribe();
    wake?.();
    await cancelling;
  }
}

/**
 * `promise`, or a rejection with `message` once `ms` have passed without it settling. An answer
 * that arrived while the process was stalled still counts, and a stall longer than half of `ms` is
 * not charged to the other side (it gets up to `ms` more, once). The late outcome is observed, so it can never be an unhandled rejection; a late value goes to `onLate`
 * (give back a connection that arrived after the caller gave up on it).
 *
 * @example
 * ```ts
 * import { within } from './run-cancellable.ts';
 *
 * await within(pool.connect(), 2_000, 'no free connection');
 * ```
 */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
  message: string,
  onLate?: (value: T) => void,
): Promise<T> {
  let timedOut = false;
  promise.then(
    (value) => {
      if (timedOut) onLate?.(value);
    },
    () => undefined,
  );
  let timer: NodeJS.Timeout | undefined;
  let turn: NodeJS.Immediate | undefined;
  const armed = performance.now();
  let extended = false;
  const late = new Promise<never>((_, reject) => {
    const expire = (): void => {
      // Node runs timers before it reads sockets in each turn of its loop: after the process stalled
      // (a loaded machine, a long synchronous task, a paused VM) an answer that has already arrived
      // is still unread when this timer fires. One more turn reads it first.
      turn = setImmediate(() => {
        // A timer that fired long past its time means the process was not running for that long,
        // and the other side (on a paused VM, the server too) got none of the budget: once, it gets
        // the missed time, at most `ms` more.
        const missed = performance.now() - armed - ms;
        if (!extended && missed > ms / 2) {
          extended = true;
          timer = setTimeout(expire, Math.min(missed, ms));
          return;
        }
        timedOut = true;
        reject(new Error(message));
      });
    };
    timer = setTimeout(expire, ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
    if (turn !== undefined) clearImmediate(turn);
  }
}
