import { InvalidLockOptionsError } from './errors.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockPort, PortConnection } from './lock-port.ts';
import { backendPidStatement } from './lock-statements.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import { statementText } from './statement.ts';

// Only a backend waiting for an advisory lock at that moment is cancelled: a cancel that arrives late
// must not interrupt whatever that pooled connection runs next.
const guardedCancel = statementText(
  `SELECT pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity
    WHERE pid = $1::text::int AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
);

/** How long one cancel attempt may wait for a control connection before core tries again. */
const CONTROL_TIMEOUT_MS = 2_000;

/**
 * Refuses `signal` before any SQL where nothing could interrupt a server-side wait.
 */
export function assertCancellable<Db>(
  port: LockPort<Db, unknown>,
  db: Db,
  request: LockRequest,
  verb: string,
): void {
  if (request.signal === undefined || request.timeoutMs === 0) return;
  if (port.cancellation(db) !== 'none') return;
  throw new InvalidLockOptionsError(
    `${verb}: signal cannot be honoured here: ${port.name} has no way to interrupt a server-side wait on this database ` +
      '(one connection only, such as a single client or PGlite). Use timeoutMs to bound the wait.',
  );
}

/** A cancel; `pid` is the waiting backend's when it was read (cancels by pid know which one). */
export type Canceller = (() => Promise<void>) & { readonly pid?: number };

/**
 * The cancel of a wait on `connection`: its own protocol cancel, or a guarded `pg_cancel_backend`
 * by backend pid on a control connection (the pid is read first, one round trip, only for calls
 * that pass a signal). `undefined` when there is nothing to cancel (no signal, or a single try).
 */
export async function cancellerFor<Db>(
  port: LockPort<Db, unknown>,
  db: Db,
  connection: PortConnection,
  request: LockRequest,
): Promise<Canceller | undefined> {
  if (request.signal === undefined || request.timeoutMs === 0) return undefined;
  if (connection.cancel !== undefined) return () => (connection.cancel as () => Promise<void>)();
  const open = port.controlConnection?.bind(port);
  if (open === undefined) return undefined;
  const [row] = await connection.query(backendPidStatement);
  const pid = Number(cell(row ?? {}, 'pid'));
  if (!Number.isInteger(pid)) return undefined;
  const stmt = guardedCancel.bind([String(pid)]);
  const cancel = async () => {
    const control = await within(
      open(db),
      CONTROL_TIMEOUT_MS,
      'no control connection for the cancel',
      (late) => late.release(),
    );
    try {
      await control.query(stmt);
    } finally {
      await control.release();
    }
  };
  return Object.assign(cancel, { pid });
}
