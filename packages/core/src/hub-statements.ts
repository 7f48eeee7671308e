import { lockTag } from './inspect-locks.ts';
import type { BigintLockKey, LockKey } from './lock-key.ts';
import { type Statement, statementText } from './statement.ts';

// The statements of a shared connection (leader-hub.ts, session-hub.ts). Each carries the
// grant-time marker of what the connection holds, so `inspectLocks` (and `pglock locks`) read a
// held-for from pg_stat_activity whichever of them ran last.

/**
 * The held-for marker of a shared connection: ` /* pglock:held-since:<oldest> *\/`, and with
 * `perKey` each lock's own grant time as `pglock:held:<classid>-<objid>-<objsubid>=<ms>;` (read by
 * inspect-locks.ts). Only digits, minus signs and fixed words: grant times are server milliseconds
 * and tags are numbers, never user input. Nothing while the connection holds nothing. PostgreSQL
 * keeps the first track_activity_query_size bytes (1 kB by default) of a statement's text: the
 * oldest grant time comes first, so a lock whose own entry was cut off reads that (an upper bound).
 *
 * @example
 * ```ts
 * import { heldMarker } from './hub-statements.ts';
 *
 * heldMarker('1764806400000'); // ' /* pglock:held-since:1764806400000 *\/'
 * ```
 */
export function heldMarker(
  oldest: string | undefined,
  perKey?: Iterable<readonly [tag: string, since: string]>,
): string {
  if (oldest === undefined) return '';
  let entries = '';
  for (const [tag, since] of perKey ?? []) entries += ` pglock:held:${tag}=${since};`;
  return ` /* pglock:held-since:${oldest}${entries} */`;
}

/** `statement` with `marker` (from {@link heldMarker}) after its text. */
export function marked(statement: Statement, marker: string): Statement {
  if (marker === '') return statement;
  const fragments = [...statement.fragments];
  fragments[fragments.length - 1] = `${fragments[fragments.length - 1] ?? ''}${marker}`;
  return { text: `${statement.text}${marker}`, fragments, values: statement.values };
}

/** The leader hub's form: the grant time of the oldest term only. */
function marker(since: string | undefined): string {
  return heldMarker(since);
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
 * The advisory locks a backend holds, one row per lock (`t`: {@link tagOf}'s tag, `m`: `x` for
 * exclusive, `s` for shared): this connection's, or backend `pid`'s asked from another connection.
 * `marker` is {@link heldMarker}'s.
 *
 * @example
 * ```ts
 * import { heldKeysStatement, tagOf } from './hub-statements.ts';
 *
 * const rows = await connection.query(heldKeysStatement(undefined, ''));
 * const held = new Set(rows.map((row) => `${row.t}:${row.m}`));
 * held.has(`${tagOf(key)}:x`);
 * ```
 */
export function heldKeysStatement(pid: number | undefined, marker: string): Statement {
  const who = pid === undefined ? 'pg_backend_pid()' : '$1::text::int';
  const text = statementText(
    "SELECT l.classid::bigint::text || '-' || l.objid::bigint::text || '-' || l.objsubid::text AS t, " +
      "CASE WHEN l.mode = 'ExclusiveLock' THEN 'x' ELSE 's' END AS m FROM pg_locks AS l " +
      `WHERE l.locktype = 'advisory' AND l.granted AND l.pid = ${who} ` +
      `AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())${marker}`,
  );
  return text.bind(pid === undefined ? [] : [String(pid)]);
}

/** `classid-objid-objsubid` of a key, as `pg_locks` lists it and {@link heldKeysStatement} gives it. */
export function tagOf(key: LockKey): string {
  const { classid, objid, objsubid } = lockTag(key);
  return `${classid}-${objid}-${objsubid}`;
}
