import { lockTag } from './inspect-locks.ts';
import type { BigintLockKey } from './lock-key.ts';
import { type Statement, statementText } from './statement.ts';

// The statements of a shared leader connection (leader-hub.ts). Each carries the grant-time marker
// of the connection's oldest term, so `inspectLocks` (and `pglock locks`) read a held-for from
// pg_stat_activity whichever of them ran last: `since` is server milliseconds, digits only.

/** ` /* pglock:held-since:<ms> *\/`, or nothing while the connection holds no term. */
function marker(since: string | undefined): string {
  return since === undefined ? '' : ` /* pglock:held-since:${since} */`;
}

/** `{1,-2,3}`: bigint keys as one array parameter (digits and minus signs only). */
function keyArray(keys: readonly BigintLockKey[]): string {
  return `{${keys.map((key) => String(key.value)).join(',')}}`;
}

/**
 * Tries every key of `keys` on this connection in one statement: a row per key, with `ok` and the
 * server's clock (the grant time of those it took).
 *
 * @example
 * ```ts
 * import { tryKeysStatement } from './hub-statements.ts';
 *
 * const rows = await connection.query(tryKeysStatement([key], undefined));
 * ```
 */
export function tryKeysStatement(keys: readonly BigintLockKey[], since: string | undefined): Statement {
  return statementText(
    'SELECT k::text AS key, pg_try_advisory_lock(k) AS ok, ' +
      `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS since FROM unnest($1::text::bigint[]) AS k${marker(since)}`,
  ).bind([keyArray(keys)]);
}

/**
 * Releases one term's key on this connection (`ok` false when the connection did not hold it).
 *
 * @example
 * ```ts
 * import { unlockKeyStatement } from './hub-statements.ts';
 *
 * const [row] = await connection.query(unlockKeyStatement(key, since));
 * ```
 */
export function unlockKeyStatement(key: BigintLockKey, since: string | undefined): Statement {
  return statementText(`SELECT pg_advisory_unlock($1::text::bigint) AS ok${marker(since)}`).bind([
    String(key.value),
  ]);
}

/**
 * The exclusive bigint advisory locks a backend holds (`c`, `o`: `pg_locks.classid` and `objid`):
 * this connection's, or backend `pid`'s asked from another connection.
 *
 * @example
 * ```ts
 * import { heldKeysStatement, tagOf } from './hub-statements.ts';
 *
 * const rows = await connection.query(heldKeysStatement(undefined, since));
 * const held = new Set(rows.map((row) => `${row.c}.${row.o}`));
 * held.has(tagOf(key));
 * ```
 */
export function heldKeysStatement(pid: number | undefined, since: string | undefined): Statement {
  const who = pid === undefined ? 'pg_backend_pid()' : '$1::text::int';
  const text = statementText(
    'SELECT l.classid::bigint::text AS c, l.objid::bigint::text AS o FROM pg_locks AS l ' +
      `WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.mode = 'ExclusiveLock' AND l.pid = ${who} ` +
      `AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())${marker(since)}`,
  );
  return text.bind(pid === undefined ? [] : [String(pid)]);
}

/** `classid.objid` of a bigint key, as {@link heldKeysStatement}'s rows give them. */
export function tagOf(key: BigintLockKey): string {
  const { classid, objid } = lockTag(key);
  return `${classid}.${objid}`;
}
