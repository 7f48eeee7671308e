import { lockTag } from './inspect-locks.ts';
import type { LockRequest } from './lock-options.ts';
import { type Statement, type StatementText, statementText } from './statement.ts';

/**
 * `SELECT pg_advisory_unlock_all()`: clears every session lock of a connection before it goes back
 * to a pool that cannot destroy it (Kysely hands connections back, it never closes one), when the
 * connection's lock state is unknown.
 *
 * @example
 * ```ts
 * import { unlockAllStatement } from './backend-statements.ts';
 *
 * await connection.query(unlockAllStatement);
 * ```
 */
export const unlockAllStatement: Statement = statementText('SELECT pg_advisory_unlock_all() AS ok').bind([]);

const alive: StatementText = statementText(
  'SELECT count(*)::int AS alive FROM pg_stat_activity WHERE pid = $1::text::int',
);

/**
 * Whether backend `pid` still exists (`alive` is 1 or 0), asked from another connection: for a driver
 * that must not write to a connection that may have closed (postgres.js, porsager/postgres#1208).
 *
 * @example
 * ```ts
 * import { backendAliveStatement } from './backend-statements.ts';
 * import { cell } from './row-cell.ts';
 *
 * const [row] = await control.query(backendAliveStatement(pid));
 * const alive = Number(cell(row ?? {}, 'alive')) > 0;
 * ```
 */
export function backendAliveStatement(pid: number): Statement {
  return alive.bind([String(pid)]);
}

/** This connection's backend pid, and the server's clock in milliseconds (the pooler check's probe). */
export const identifyBackendStatement = statementText(
  'SELECT pg_backend_pid() AS pid, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS since',
).bind([]);

/** The statement that counts how many of `keys` backend `pid` (or this connection's) holds. */
export function heldStatement(
  request: LockRequest,
  pid: number | undefined,
  since: string | undefined,
): Statement {
  const classids: number[] = [];
  const objids: number[] = [];
  const subids: number[] = [];
  for (const key of request.keys) {
    const tag = lockTag(key);
    classids.push(tag.classid);
    objids.push(tag.objid);
    subids.push(tag.objsubid);
  }
  const mode = request.shared ? 'ShareLock' : 'ExclusiveLock';
  // The marker keeps the lock's grant time readable from pg_stat_activity (the heartbeat resets
  // state_change): `since` is a number of milliseconds read from the server, digits only.
  const marker = since === undefined ? '' : ` /* pglock:held-since:${since} */`;
  const who = pid === undefined ? 'pg_backend_pid()' : '$4::text::int';
  const text =
    `SELECT count(*)::int AS held${marker} FROM pg_locks AS l ` +
    'JOIN unnest($1::text::bigint[], $2::text::bigint[], $3::text::int[]) AS k(c, o, s) ' +
    'ON l.classid = k.c::oid AND l.objid = k.o::oid AND l.objsubid = k.s ' +
    `WHERE l.locktype = 'advisory' AND l.granted AND l.pid = ${who} AND l.mode = '${mode}' ` +
    'AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())';
  const values = [`{${classids.join(',')}}`, `{${objids.join(',')}}`, `{${subids.join(',')}}`];
  if (pid !== undefined) values.push(String(pid));
  return statementText(text).bind(values);
}
