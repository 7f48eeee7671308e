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
