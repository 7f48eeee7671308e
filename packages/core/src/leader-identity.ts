import { hostname } from 'node:os';
import { InvalidLockOptionsError } from './errors.ts';
import { LockTableMissingError } from './job-errors.ts';
import { electStatement, JOBS_TABLE, JOBS_TABLE_UPGRADE_DDL, jobsTableError } from './jobs-table.ts';
import type { BigintLockKey } from './lock-key.ts';
import type { PortConnection } from './lock-port.ts';
import { cell } from './row-cell.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';

// Who leads a term: `leader(…, { identity })`, stored with the term in pglock_jobs.identity.

/** The longest `identity` a campaign takes (characters): a host name, a URL, a pod name. */
export const MAX_IDENTITY_LENGTH = 256;

/**
 * The identity of a campaign that names none: `host:pid` (`api-7f9c:4123`), which tells an operator
 * where to look; pass `identity` for something better (a URL the leader serves, a pod name).
 */
export function defaultIdentity(): string {
  return `${hostname()}:${process.pid}`;
}

/** `identity` checked before any SQL: a non-empty string of at most {@link MAX_IDENTITY_LENGTH} characters. */
export function checkIdentity(value: unknown, verb: string): string {
  if (value === undefined) return defaultIdentity();
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_IDENTITY_LENGTH ||
    value.includes('\u0000')
  ) {
    const got = typeof value === 'string' ? `a string of ${value.length} characters` : typeof value;
    throw new InvalidLockOptionsError(
      `${verb}: identity must be a string of 1 to ${MAX_IDENTITY_LENGTH} characters without U+0000 (got ${got}); it says who leads, e.g. a host name or URL. Omit it for \`host:pid\`.`,
    );
  }
  return value;
}

/**
 * Writes the next term with `identity` on the connection that holds the lock. On a table from
 * before `identity` it writes the term alone and hands `onMissing` the error that says how to
 * upgrade: the campaign goes on leading, without an identity, until the table is upgraded.
 */
export async function electTerm(
  connection: PortConnection,
  key: BigintLockKey,
  identity: string,
  verb: string,
  onMissing: (error: LockTableMissingError) => void,
): Promise<number> {
  let rows: Awaited<ReturnType<PortConnection['query']>>;
  try {
    try {
      rows = await connection.query(electStatement(key, identity));
    } catch (error) {
      // Outside a transaction: the failed statement leaves nothing behind on the connection.
      if (sqlStateOf(error) !== SqlState.undefinedColumn) throw error;
      rows = await connection.query(electStatement(key));
      onMissing(
        new LockTableMissingError(
          `${verb}: the table ${JOBS_TABLE} has no column identity (an older pglock created it): the term was written without its identity, so currentLeader and \`pglock jobs\` cannot say who leads. Upgrade the table once, in a migration (\`pglock schema\` prints it):\n\n${JOBS_TABLE_UPGRADE_DDL}\n`,
          { keys: [key], cause: error, ddl: JOBS_TABLE_UPGRADE_DDL, column: 'identity' },
        ),
      );
    }
  } catch (error) {
    throw jobsTableError(error, key, verb, 'writing the term under');
  }
  const term = Number(cell(rows[0] ?? {}, 'term'));
  if (!Number.isSafeInteger(term)) throw new Error('pglock bug: the election returned no term');
  return term;
}
