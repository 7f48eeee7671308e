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
