// Five digits or capitals, except two look-alikes: Prisma's own codes (P1000 … P6999, e.g. P2010)
// and Node's system error codes (EPIPE, EBADF: every one starts with E, no SQLSTATE class does).
// PostgreSQL's class P0 is PL/pgSQL's (P0001 is RAISE EXCEPTION's default), so it stays a SQLSTATE.
const SQLSTATE = /^(?!E|P[1-9])[0-9A-Z]{5}$/;

/**
 * Finds the PostgreSQL SQLSTATE in an error from any driver or ORM: `code` on node-postgres,
 * postgres.js and PGlite errors; on Prisma 7's `PrismaClientKnownRequestError` (code P2010) in
 * `meta.driverAdapterError.cause.originalCode` (its `.code` is missing for some kinds, e.g. 40P01);
 * and one or more levels down `cause` where an ORM wraps the driver's error (Drizzle's DrizzleQueryError).
 *
 * @example
 * ```ts
 * import { sqlStateOf } from '@pglock/core/adapter';
 *
 * sqlStateOf({ code: '55P03' }); // '55P03'
 * ```
 */
export function sqlStateOf(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  const candidate = error as {
    code?: unknown;
    originalCode?: unknown;
    sqlState?: unknown;
    meta?: { code?: unknown; driverAdapterError?: unknown };
    cause?: unknown;
  };
  for (const value of [candidate.originalCode, candidate.code, candidate.sqlState, candidate.meta?.code]) {
    if (typeof value === 'string' && SQLSTATE.test(value)) return value;
  }
  return sqlStateOf(candidate.meta?.driverAdapterError, depth + 1) ?? sqlStateOf(candidate.cause, depth + 1);
}

/** SQLSTATEs pglock gives a meaning to. */
export const SqlState = {
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  deadlockDetected: '40P01',
  inFailedTransaction: '25P02',
  undefinedTable: '42P01',
  undefinedColumn: '42703',
} as const;

/** Drivers' own codes for a connection that ended (postgres.js's, Node's socket errors). */
const ENDED_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
  'EPIPE',
]);

/**
 * Whether an error says its connection ended, here or one or more levels down `cause`: the server
 * ended the session (class 08, 57P01/02/03/05), or the driver saw the socket close (postgres.js's
 * `CONNECTION_CLOSED`…, node-postgres's "Connection terminated"). A statement written after it is
 * wasted at best, and on postgres.js can crash the process (porsager/postgres#1208).
 *
 * @example
 * ```ts
 * import { saysConnectionEnded } from '@pglock/core/adapter';
 *
 * saysConnectionEnded({ code: '57P01' }); // true: terminated by the server
 * ```
 */
export function saysConnectionEnded(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const state = sqlStateOf(error);
  if (state !== undefined && (state.startsWith('08') || /^57P0[1235]$/.test(state))) return true;
  const { code, message, cause } = error as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof code === 'string' && ENDED_CODES.has(code)) return true;
  // node-postgres: its socket closed, or a client that saw it close asked again.
  if (typeof message === 'string' && /^Connection terminated|is not queryable$/.test(message)) return true;
  return saysConnectionEnded(cause, depth + 1);
}
