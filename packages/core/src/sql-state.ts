const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * Finds the PostgreSQL SQLSTATE in an error from any driver or ORM: `code` on node-postgres and
 * postgres.js errors, `meta.code` on Prisma's known request errors, and the same one or more levels
 * down `cause` where an ORM wraps the driver's error (Drizzle's DrizzleQueryError, Prisma's adapters).
 *
 * @example
 * ```ts
 * import { sqlStateOf } from '@pglock/core';
 *
 * sqlStateOf({ code: '55P03' }); // '55P03'
 * ```
 */
export function sqlStateOf(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  const candidate = error as {
    code?: unknown;
    sqlState?: unknown;
    meta?: { code?: unknown };
    cause?: unknown;
  };
  for (const value of [candidate.code, candidate.sqlState, candidate.meta?.code]) {
    if (typeof value === 'string' && SQLSTATE.test(value) && !value.startsWith('P')) return value;
  }
  return sqlStateOf(candidate.cause, depth + 1);
}

/** SQLSTATEs pglock gives a meaning to. */
export const SqlState = {
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  deadlockDetected: '40P01',
} as const;
