import { type LockKey, lockKey } from './lock-key.ts';
import type { Row } from './lock-port.ts';
import { cell } from './row-cell.ts';
import type { Statement } from './statement.ts';
import { statementText } from './statement.ts';

/** Runs one statement somewhere and resolves its rows (a port's `query` bound to a database). */
export type QueryRunner = (statement: Statement) => Promise<readonly Row[]>;

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
   * For a holder: milliseconds since its current transaction began; for a session lock pglock holds,
   * since it was granted (its connection's statements carry the grant time: of each lock on a shared
   * connection, of the oldest for a lock past the 24 oldest its statements name; of the oldest term
   * on a shared leader connection); for another session lock, since the
   * connection went idle (the server does not record when an advisory lock was granted, so this is an
   * upper bound for a transaction-scoped lock and a lower bound for a foreign session lock).
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
export const inspectLocksStatement: Statement = statementText(
  `SELECT l.classid::bigint::text AS classid, l.objid::bigint::text AS objid, l.objsubid::int AS objsubid,
    l.mode, l.granted, l.pid, a.application_name AS appname, host(a.client_addr) AS clientaddr, a.state,
    CASE WHEN l.granted THEN (extract(epoch FROM clock_timestamp() - coalesce(
      CASE WHEN a.query LIKE '%pglock:held-since:%' THEN to_timestamp(coalesce(
        substring(a.query FROM 'pglock:held:' || l.classid::bigint || '-' || l.objid::bigint || '-' || l.objsubid || '=([0-9]+);'),
        substring(a.query FROM 'pglock:held-since:([0-9]+)'))::bigint / 1000.0) END,
      a.xact_start, a.state_change)) * 1000)::float8 END AS heldms,
    CASE WHEN NOT l.granted THEN (extract(epoch FROM clock_timestamp() - l.waitstart) * 1000)::float8 END AS waitedms,
    coalesce(l.pid = pg_backend_pid(), false) AS ownsession
  FROM pg_locks AS l
  LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
  WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  ORDER BY l.classid, l.objid, l.objsubid, l.granted DESC, l.waitstart NULLS LAST, l.pid`,
).bind([]);

/**
 * Lists every advisory lock (holders and waiters) in the current database, grouped by key with
 * holders first and waiters in arrival order.
 *
 * @example
 * ```ts
 * import { inspectLocks } from './inspect-locks.ts';
 *
 * for (const lock of await inspectLocks((s) => port.query(db, s))) {
 *   console.log(lock.key, lock.granted ? 'held by' : 'waited for by', lock.pid);
 * }
 * ```
 */
export async function inspectLocks(query: QueryRunner): Promise<AdvisoryLockInfo[]> {
  const rows = await query(inspectLocksStatement);
  // Columns are read through cell(): a driver's column transform (postgres.js camel or pascal case)
  // may have renamed them.
  return rows.map((row) => {
    const classid = Number(cell(row, 'classid'));
    const objid = Number(cell(row, 'objid'));
    const pid = cell(row, 'pid');
    return {
      key: keyFromTag(classid, objid, Number(cell(row, 'objsubid'))),
      classid,
      objid,
      mode: cell(row, 'mode') === 'ShareLock' ? 'shared' : 'exclusive',
      granted: cell(row, 'granted') === true,
      pid: pid === null || pid === undefined ? null : Number(pid),
      applicationName: (cell(row, 'appname') as string | null) ?? null,
      clientAddress: (cell(row, 'clientaddr') as string | null) ?? null,
      state: (cell(row, 'state') as string | null) ?? null,
      heldMs: numberOrNull(cell(row, 'heldms')),
      waitedMs: numberOrNull(cell(row, 'waitedms')),
      ownSession: cell(row, 'ownsession') === true,
    };
  });
}

const isLockedText =
  statementText(`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = $1::text::bigint::oid AND objid = $2::text::bigint::oid AND objsubid = $3::text::int) AS locked`);

/**
 * True when any session holds `key` (in either mode). A snapshot: it may change right after.
 *
 * @example
 * ```ts
 * import { isLocked } from './inspect-locks.ts';
 * import { lockKey } from '@pglock/core';
 *
 * if (await isLocked((s) => port.query(db, s), lockKey('nightly'))) console.log('the nightly job is running');
 * ```
 */
export async function isLocked(query: QueryRunner, key: LockKey): Promise<boolean> {
  const { classid, objid, objsubid } = lockTag(key);
  const [row] = await query(isLockedText.bind([String(classid), String(objid), String(objsubid)]));
  return cell(row ?? {}, 'locked') === true;
}

/**
 * The `(classid, objid, objsubid)` under which `pg_locks` lists `key`.
 *
 * @example
 * ```ts
 * import { lockKey } from '@pglock/core';
 * import { lockTag } from '@pglock/core/internal';
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
