import { backendAliveStatement, unlockAllStatement } from '../backend-statements.ts';
import { freshAnswer } from '../fresh-answer.ts';
import type { ControlConnection, PinnedConnection, Row } from '../lock-port.ts';
import { backendPidStatement } from '../lock-statements.ts';
import { cell } from '../row-cell.ts';
import { within } from '../run-cancellable.ts';
import { sqlStateOf } from '../sql-state.ts';
import type { Statement } from '../statement.ts';

/**
 * A connection an ORM lends for as long as pglock needs it and takes back when told (Kysely's
 * `db.connection()` callback held open), on a driver that cannot destroy one connection by itself.
 */
export interface LentConnection {
  query(statement: Statement): Promise<readonly Row[]>;
  /** Gives the connection back to its pool. */
  handBack(): Promise<void>;
  /**
   * The driver throws from a timer, where no caller can catch it, on a write to a connection it saw
   * close, and its pool takes a closed connection back as if open (postgres.js, porsager/postgres#1208,
   * #1199): such a connection is never written to again nor handed back once it failed (postgres.js
   * reopens a closed connection by itself).
   */
  readonly fragile: boolean;
}

/** The longest wait for the cleanup of a lent connection, and for the liveness check before it. */
const CLEANUP_MS = 2_000;
/** How often (and how many times) a fragile pin left with no answer is asked about again. */
const RECHECK_MS = 1_000;
const RECHECKS = 30;

/** The connection itself failed: no SQLSTATE (a closed socket), or FATAL (the server ends the session). */
function connectionDied(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | null)?.severity;
  return sqlStateOf(error) === undefined || severity === 'FATAL' || severity === 'PANIC';
}

/** `lent` with a note of whether a statement on it found the connection dead. */
function watched(lent: LentConnection, onDeath?: (cause: unknown) => void) {
  const state = { died: false };
  const query = (s: Statement) =>
    lent.query(s).catch((error: unknown) => {
      if (connectionDied(error)) {
        state.died = true;
        onDeath?.(error);
      }
      throw error;
    });
  return { state, query };
}

/**
 * A control connection (a cancel, a pooler check, a heartbeat by pid) over a lent one: handed back
 * when done, except a fragile one that died.
 *
 * @example
 * ```ts
 * import { lentControl, type LentConnection } from '@pglock/core/drivers/postgres-js';
 *
 * declare const lent: LentConnection;
 * const control = lentControl(lent);
 * await control.release();
 * ```
 */
export function lentControl(lent: LentConnection): ControlConnection {
  const { state, query } = watched(lent);
  return { query, release: () => (state.died && lent.fragile ? undefined : lent.handBack()) };
}

/**
 * A session lock's pin over a lent connection. Its lock state unknown at release, every session lock
 * is cleared before the pool gets it back (bounded: a statement on a dead connection may never
 * settle). On a fragile driver only while another connection (`control`) says its backend lives,
 * asked before `release` resolves; with no answer in time the pin is kept and asked about again in
 * the background, so a busy pool gets it back later instead of never; the heartbeat runs from
 * `control` too, never writing to the pin.
 *
 * @example
 * ```ts
 * import type { Statement } from '@pglock/core/adapter';
 * import { lentPin, type LentConnection } from '@pglock/core/drivers/postgres-js';
 *
 * declare const lent: LentConnection;
 * declare const control: (statement: Statement) => Promise<readonly Record<string, unknown>[]>;
 * const pinned = await lentPin(lent, control, (cause) => console.error(cause));
 * await pinned.release('unknown');
 * ```
 */
export async function lentPin(
  lent: LentConnection,
  control: (statement: Statement) => Promise<readonly Row[]>,
  onDeath: (cause: unknown) => void,
): Promise<PinnedConnection> {
  const { state, query } = watched(lent, onDeath);
  const settle = (clean: boolean) => (clean || !lent.fragile ? lent.handBack() : undefined);
  let pid = Number.NaN;
  if (lent.fragile) {
    try {
      pid = Number(cell((await query(backendPidStatement))[0] ?? {}, 'pid'));
    } catch (error) {
      await settle(!state.died);
      throw error;
    }
  }
  const clear = (): Promise<boolean> =>
    within(query(unlockAllStatement), CLEANUP_MS, 'no answer').then(
      () => true,
      () => false,
    );
  // `undefined`: no answer (a busy pool, or the control statement failed: its own connection may
  // have been the one terminated, and the pin may live); only the server's "gone" is `false`.
  const alive = (): Promise<boolean | undefined> => {
    const answer = freshAnswer(() => control(backendAliveStatement(pid))).then(
      ([row]) => Number(cell(row ?? {}, 'alive')) > 0,
      () => undefined,
    );
    return within(answer, CLEANUP_MS, 'busy').catch(() => undefined);
  };
  // `true` once the answer settled the pin (handed back, or kept off a dead backend for good).
  const settleOn = async (lives: boolean | undefined): Promise<boolean> => {
    if (lives === true) await settle(!state.died && (await clear()));
    return lives !== undefined;
  };
  const recheck = async (): Promise<void> => {
    for (let round = 1; round < RECHECKS; round++) {
      await new Promise((resolve) => setTimeout(resolve, RECHECK_MS).unref());
      if (await settleOn(await alive())) return;
    }
  };
  return {
    query,
    heartbeatOn: 'control',
    processID: undefined,
    async release(status) {
      if (status === 'clean' || status === 'dead' || state.died) return settle(status === 'clean');
      if (!lent.fragile) return settle(await clear());
      // The first answer is awaited: the app may close its pool as soon as this call returns, and
      // a connection pglock still held then keeps that close from settling (postgres.js's end()
      // never settles for a connection reserved when it was called, even once it is released).
      // Only a pool too busy to answer in time leaves the pin to the rechecks in the background.
      if (!(await settleOn(await alive()))) void recheck().catch(() => undefined);
    },
  };
}
