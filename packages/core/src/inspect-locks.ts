import type { LockExecutor } from './lock-executor.ts';
import { type LockKey, lockKey } from './lock-key.ts';
import { statement } from './statement.ts';

/**
 * One row of `pg_locks` for an advisory lock in the current database, joined with
 * `pg_stat_activity`.
 */
export interface AdvisoryLockInfo {
  /** The key in the form it was taken (bigint, or pair); a bigint key's `name` is not knowable from the server. */
  readonly key: LockKey;
  /** The two 32-bit halves as `pg_locks` shows them (`classid`, `objid`, unsigned). */
  readonly classid: number;
  readonly objid: number;
  readonly mode: 'exclusive' | 'shared';
  /** True for a holder, false for a waiter. */
  readonly granted: boolean;
  /** Backend pid of the holder or waiter (null for a prepared transaction). */
  readonly pid: number | null;
  readonly applicationName: string | null;
  readonly clientAddress: string | null;
  /** The backend's state (`active`, `idle in transaction`, `idle`, …). */
  readonly state: string | null;
  /**
   * For a holder: milliseconds since its current transaction began, or since it went idle when not in
   * one (the server does not record when an advisory lock was granted, so this is an upper bound for
   * a transaction-scoped lock and a lower bound for a session lock held by an idle connection).
   */
  readonly heldMs: number | null;
  /** For a waiter: milliseconds it has waited (`pg_locks.waitstart`). */
  readonly waitedMs: number | null;
  /** True when the row belongs to the connection that ran the inspection. */
  readonly ownSession: boolean;
}

/**
 * `pg_locks` with the holder's activity; PostgreSQL 14+ (`waitstart`). A waiter's `waitstart` can be
 * null for a moment after its wait began (the waiting backend fills it in), so nulls sort last: the
 * newest waiter.
 */
export const inspectLocksStatement = statement(
  `SELECT l.classid::bigint::text AS classid, l.objid::bigint::text AS objid, l.objsubid::int AS objsubid,
    l.mode, l.granted, l.pid, a.application_name, host(a.client_addr) AS client_addr, a.state,
    CASE WHEN l.granted THEN (extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, a.state_change)) * 1000)::float8 END AS held_ms,
    CASE WHEN NOT l.granted THEN (extract(epoch FROM clock_timestamp() - l.waitstart) * 1000)::float8 END AS waited_ms,
    coalesce(l.pid = pg_backend_pid(), false) AS own_session
  FROM pg_locks AS l
  LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
  WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  ORDER BY l.classid, l.objid, l.objsubid, l.granted DESC, l.waitstart NULLS LAST, l.pid`,
);

/**
 * Lists every advisory lock (holders and waiters) in the current database, grouped by key with
 * holders first and waiters in arrival order.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/core';
 *
 * for (const lock of await inspectLocks(executor)) {
 *   console.log(lock.key, lock.granted ? 'held by' : 'waited for by', lock.pid);
 * }
 * ```
 */
export async function inspectLocks(executor: LockExecutor): Promise<AdvisoryLockInfo[]> {
  const rows = await executor.query(inspectLocksStatement);
  return rows.map((row) => {
    const classid = Number(row.classid);
    const objid = Number(row.objid);
    return {
      key: keyFromTag(classid, objid, Number(row.objsubid)),
      classid,
      objid,
      mode: row.mode === 'ShareLock' ? 'shared' : 'exclusive',
      granted: row.granted === true,
      pid: row.pid === null || row.pid === undefined ? null : Number(row.pid),
      applicationName: (row.application_name as string | null) ?? null,
      clientAddress: (row.client_addr as string | null) ?? null,
      state: (row.state as string | null) ?? null,
      heldMs: numberOrNull(row.held_ms),
      waitedMs: numberOrNull(row.waited_ms),
      ownSession: row.own_session === true,
    };
  });
}

const isLockedText = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = $1::text::bigint::oid AND objid = $2::text::bigint::oid AND objsubid = $3::text::int) AS locked`;

/**
 * True when any session holds `key` (in either mode). A snapshot: it may change right after.
 *
 * @example
 * ```ts
 * import { isLocked, lockKey } from '@pglock/core';
 *
 * if (await isLocked(executor, lockKey('nightly'))) console.log('the nightly job is running');
 * ```
 */
export async function isLocked(executor: LockExecutor, key: LockKey): Promise<boolean> {
  const { classid, objid, objsubid } = lockTag(key);
  const [row] = await executor.query(
    statement(isLockedText, [String(classid), String(objid), String(objsubid)]),
  );
  return row?.locked === true;
}

const ownsText = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = $1::text::bigint::oid AND objid = $2::text::bigint::oid AND objsubid = $3::text::int) AS held`;

/**
 * True when the connection running the statement (its server backend) holds `key`. Session-lock
 * handles use it as their heartbeat: behind a transaction-mode pooler the statement can land on
 * another backend, which then does not hold the lock.
 *
 * @example
 * ```ts
 * import { holdsLock, lockKey } from '@pglock/core';
 *
 * if (!(await holdsLock(pinnedExecutor, lockKey('leader')))) console.log('lost it');
 * ```
 */
export async function holdsLock(executor: LockExecutor, key: LockKey): Promise<boolean> {
  const { classid, objid, objsubid } = lockTag(key);
  const [row] = await executor.query(statement(ownsText, [String(classid), String(objid), String(objsubid)]));
  return row?.held === true;
}

/**
 * The `(classid, objid, objsubid)` under which `pg_locks` lists `key`.
 *
 * @example
 * ```ts
 * import { lockKey, lockTag } from '@pglock/core';
 *
 * lockTag(lockKey({ pair: [1, -1] })); // { classid: 1, objid: 4294967295, objsubid: 2 }
 * ```
 */
export function lockTag(key: LockKey): { classid: number; objid: number; objsubid: 1 | 2 } {
  if (key.form === 'pair') return { classid: key.pair[0] >>> 0, objid: key.pair[1] >>> 0, objsubid: 2 };
  const unsigned = BigInt.asUintN(64, key.value);
  return { classid: Number(unsigned >> 32n), objid: Number(unsigned & 0xffffffffn), objsubid: 1 };
}

function keyFromTag(classid: number, objid: number, objsubid: number): LockKey {
  if (objsubid === 2) return lockKey({ pair: [classid | 0, objid | 0] });
  return lockKey(BigInt.asIntN(64, (BigInt(classid) << 32n) | BigInt(objid)));
}

function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
