import { type Statement, statementText } from './statement.ts';

/**
 * `COMMIT`, for adapters that end their transactions with SQL (node-postgres). PostgreSQL answers it
 * with the command tag `ROLLBACK` when a statement in the transaction had failed.
 *
 * @example
 * ```ts
 * import { commitStatement } from './transaction-statements.ts';
 *
 * const result = await client.query(commitStatement.text);
 * if (result.command === 'ROLLBACK') console.log('nothing was saved');
 * ```
 */
export const commitStatement: Statement = statementText('COMMIT').bind([]);

/**
 * `ROLLBACK`, for adapters that end their transactions with SQL (node-postgres).
 *
 * @example
 * ```ts
 * import { rollbackStatement } from './transaction-statements.ts';
 *
 * await client.query(rollbackStatement.text);
 * ```
 */
export const rollbackStatement: Statement = statementText('ROLLBACK').bind([]);

/** Asks a transaction whether it still runs: fails with 25P02 once a statement in it has failed. */
export const failedCheck: Statement = statementText('SELECT 1 AS ok').bind([]);

const savepoints: Statement[][] = [];

/** `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` for nesting depth `depth` (fixed names, built once). */
export function savepointStatements(depth: number): Statement[] {
  let statements = savepoints[depth];
  if (statements === undefined) {
    const name = `pglock_nested_${depth}`;
    statements = [
      statementText(`SAVEPOINT ${name}`).bind([]),
      statementText(`RELEASE SAVEPOINT ${name}`).bind([]),
      statementText(`ROLLBACK TO SAVEPOINT ${name}`).bind([]),
    ];
    savepoints[depth] = statements;
  }
  return statements;
}
