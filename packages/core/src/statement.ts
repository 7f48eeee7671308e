/**
 * One SQL statement with positional parameters, in the two forms drivers want: `text` with `$1…$n`
 * (node-postgres, Prisma's `$queryRawUnsafe`) and `fragments` around the parameters, like a
 * template literal's strings (Drizzle's and Kysely's `sql` builders). Every value is a string that
 * the SQL casts, so no driver has to guess a type (and bigints never pass through a JS number).
 */
export interface Statement {
  readonly text: string;
  readonly fragments: readonly string[];
  readonly values: readonly string[];
}

/**
 * Builds a {@link Statement} from SQL whose placeholders are `$1…$n`, each used once, in order.
 *
 * @example
 * ```ts
 * import { statement } from '@pglock/core';
 *
 * const s = statement('SELECT pg_try_advisory_lock($1::bigint) AS ok', ['42']);
 * s.fragments; // ['SELECT pg_try_advisory_lock(', '::bigint) AS ok']
 * ```
 */
export function statement(text: string, values: readonly string[] = []): Statement {
  const fragments = text.split(/\$\d+/);
  const placeholders = text.match(/\$\d+/g) ?? [];
  placeholders.forEach((placeholder, i) => {
    if (placeholder !== `$${i + 1}`)
      throw new Error(`pglock bug: placeholder ${placeholder} out of order in: ${text}`);
  });
  if (placeholders.length !== values.length) {
    throw new Error(
      `pglock bug: ${values.length} values for ${placeholders.length} placeholders in: ${text}`,
    );
  }
  return Object.freeze({ text, fragments: Object.freeze(fragments), values: Object.freeze([...values]) });
}
