import { InvalidLockOptionsError } from './errors.ts';
import type { QueryRunner } from './inspect-locks.ts';
import { lockTag } from './inspect-locks.ts';
import { jobsTableError } from './jobs-table.ts';
import type { BigintLockKey } from './lock-key.ts';
import type { Row } from './lock-port.ts';
import { CURRENT_LEADER_OPTION_KEYS, checkOptionKeys } from './option-keys.ts';
import { cell } from './row-cell.ts';
import { jobKey } from './run-once.ts';
import { statementText } from './statement.ts';

/**
 * Who leads a name now, as `currentLeader` reads it from the server: the term and its identity from
 * `pglock_jobs`, the holder's backend from `pg_locks` and `pg_stat_activity`.
 *
 * @example
 * ```ts
 * import type { LeaderInfo } from '@pglock/core';
 *
 * const describe = (leader: LeaderInfo | undefined) =>
 *   leader === undefined ? 'no leader' : `term ${leader.term} led by ${leader.identity ?? '?'} since ${leader.since.toISOString()}`;
 * ```
 */
export interface LeaderInfo {
  /** The term it leads (the fencing token its `onElected` got). */
  readonly term: number;
  /** When that term began (the server's clock). */
  readonly since: Date;
  /** The campaign's `identity` (default `host:pid`); `undefined` on a table from before `identity`. */
  readonly identity: string | undefined;
  /** The backend pid that holds the leader's lock (`pg_terminate_backend` ends the term). */
  readonly pid: number;
  /** That backend's `application_name`; `undefined` when the server hides it from this role. */
  readonly application: string | undefined;
}

/**
 * Options of `currentLeader`.
 *
 * @example
 * ```ts
 * import type { CurrentLeaderOptions } from '@pglock/core';
 *
 * const options: CurrentLeaderOptions = { namespace: 'billing' };
 * ```
 */
export interface CurrentLeaderOptions {
  /** Mixed into the hash of the name, as for every lock (the campaign's `namespace`). */
  readonly namespace?: string | undefined;
}

// One statement, so that it works through a transaction-mode pooler: the granted exclusive lock of
// the name's key, the term its holder wrote, and that backend's activity. The row is read as jsonb
// for `identity`, so a table from before that column answers too. A row with term 0 is a runOnce
// job's (no leader ever elected): not a leader. A row elected before the holder's backend started
// cannot be the holder's term: a standby that was just granted the lock and has not written its
// term yet (or a plain lock on the name), so no leader is shown rather than the previous term with
// the new holder's pid. (A holder whose backend is older than the previous term, such as a pooled
// connection, is not told apart that way: for that one statement's time it shows the previous term.)
const currentLeaderText = statementText(
  `SELECT j.term::text AS term, floor(extract(epoch FROM j.elected_at) * 1000)::bigint::text AS since,
    to_jsonb(j) ->> 'identity' AS identity, l.pid, a.application_name AS appname
  FROM pg_locks AS l
  JOIN pglock_jobs AS j ON j.key = $1::text::bigint AND j.term > 0
  LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
  WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'
    AND (a.backend_start IS NULL OR a.backend_start <= j.elected_at)
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = $2::text::bigint::oid AND l.objid = $3::text::bigint::oid AND l.objsubid = 1
  LIMIT 1`,
);

/** The name's key from `currentLeader`'s arguments, checked before any SQL. */
export function currentLeaderKey(
  name: unknown,
  options: CurrentLeaderOptions | undefined,
  defaultNamespace: string | undefined,
  verb: string,
): BigintLockKey {
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidLockOptionsError(
        `${verb}: options must be an object (got ${options === null ? 'null' : typeof options}); omit it for the defaults.`,
      );
    }
    checkOptionKeys(options, CURRENT_LEADER_OPTION_KEYS, verb);
  }
  return jobKey(name, options?.namespace ?? defaultNamespace, verb);
}

/**
 * Reads who leads `key` now, without campaigning: `undefined` when no session holds the name's lock
 * (or its holder has not written its term yet). A snapshot: it may change right after.
 */
export async function readCurrentLeader(
  query: QueryRunner,
  key: BigintLockKey,
  verb: string,
): Promise<LeaderInfo | undefined> {
  const { classid, objid } = lockTag(key);
  let rows: readonly Row[];
  try {
    rows = await query(currentLeaderText.bind([String(key.value), String(classid), String(objid)]));
  } catch (error) {
    throw jobsTableError(error, key, verb, 'reading the leader of');
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  const identity = cell(row, 'identity');
  const application = cell(row, 'appname');
  return Object.freeze({
    term: Number(cell(row, 'term')),
    since: new Date(Number(cell(row, 'since'))),
    identity: typeof identity === 'string' ? identity : undefined,
    pid: Number(cell(row, 'pid')),
    application: typeof application === 'string' ? application : undefined,
  });
}
