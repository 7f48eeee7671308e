import type { LockExecutor } from './lock-executor.ts';
import { backendPidStatement } from './lock-statements.ts';
import type { Statement } from './statement.ts';

/** What {@link runCancellable} saw: the rows, or the error, and whether the signal fired meanwhile. */
export type CancellableOutcome =
  | { readonly ok: true; readonly rows: readonly Record<string, unknown>[]; readonly aborted: boolean }
  | { readonly ok: false; readonly error: unknown; readonly aborted: boolean };

const RETRY_FIRST_MS = 25;
const RETRY_MAX_MS = 1_000;

/**
 * Runs a statement that may wait, cancelling it on the server when `signal` fires. A cancel that
 * reaches the server before the statement has started is ignored there, so the cancel is repeated
 * (with backoff) until the statement settles; a cancel reaching an idle connection is ignored by
 * PostgreSQL, so a late one is harmless.
 */
export async function runCancellable(
  executor: LockExecutor,
  stmt: Statement,
  signal: AbortSignal | undefined,
): Promise<CancellableOutcome> {
  if (signal === undefined) {
    try {
      return { ok: true, rows: await executor.query(stmt), aborted: false };
    } catch (error) {
      return { ok: false, error, aborted: false };
    }
  }
  const cancel = executor.cancel?.bind(executor);
  if (cancel === undefined) throw new Error('pglock bug: runCancellable without executor.cancel');
  let pid: number | undefined;
  if (executor.cancelNeedsPid) {
    const [row] = await executor.query(backendPidStatement);
    pid = Number(row?.pid);
  }

  let settled = false;
  let aborted = false;
  let cancelling: Promise<void> | undefined;
  const keepCancelling = async (): Promise<void> => {
    let delay = RETRY_FIRST_MS;
    while (!settled) {
      await cancel(pid).catch(() => undefined);
      if (settled) return;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  };
  const onAbort = (): void => {
    aborted = true;
    cancelling = keepCancelling();
  };

  if (signal.aborted) return { ok: false, error: signal.reason, aborted: true };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const rows = await executor.query(stmt);
    return { ok: true, rows, aborted };
  } catch (error) {
    return { ok: false, error, aborted };
  } finally {
    settled = true;
    signal.removeEventListener('abort', onAbort);
    await cancelling;
  }
}
