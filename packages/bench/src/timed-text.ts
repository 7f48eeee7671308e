import { lockKey } from '@pglock/core';
import { timedLockStatement } from '@pglock/core/internal';

/**
 * The text of the bounded-wait statement core sends for one bigint key (`$1` the budget, `$2` the
 * key), so pgbench measures exactly what pglock runs.
 *
 * @example
 * ```ts
 * const text = await timedStatementText();
 * ```
 */
export async function timedStatementText(): Promise<string> {
  return timedLockStatement([lockKey(1n)], 'transaction', false, 5_000).text;
}
