/**
 * One SQL statement with positional parameters, in the two forms drivers want: `text` with `$1…$n`
 * (node-postgres, Prisma's `$queryRawUnsafe`, postgres.js's `unsafe`) and `fragments` around the
 * parameters, like a template literal's strings (Drizzle's and Kysely's `sql` builders). Every value
 * is a string that the SQL casts, so no driver has to guess a type (and bigints never pass through a
 * JS number).
 *
 * @example
 * ```ts
 * import type { Statement } from '@pglock/core/adapter';
 *
 * const run = (statement: Statement) => pool.query(statement.text, [...statement.values]);
 * ```
 */
export interface Statement {
  readonly text: string;
  readonly fragments: readonly string[];
  readonly values: readonly string[];
}

/**
 * A statement text parsed once; {@link StatementText.bind} makes a {@link Statement} per call
 * without splitting the text again.
 *
 * @example
 * ```ts
 * import type { Statement, StatementText } from '@pglock/core/adapter';
 *
 * declare const text: StatementText; // parsed once, in core
 * const statement: Statement = text.bind(['42']);
 * ```
 */
export interface StatementText {
  readonly text: string;
  readonly fragments: readonly string[];
  /** The statement with these values (as many as the text has placeholders). */
  bind(values: readonly string[]): Statement;
}

/**
 * Parses SQL whose placeholders are `$1…$n`, each used once, in order. Only pglock's own fixed texts
 * come here: user input is always a bound value, never text.
 *
 * @example
 * ```ts
 * import { statementText } from './statement.ts';
 *
 * const tryLock = statementText('SELECT pg_try_advisory_lock($1::text::bigint) AS ok');
 * tryLock.bind(['42']).fragments; // ['SELECT pg_try_advisory_lock(', '::text::bigint) AS ok']
 * ```
 */
export function statementText(text: string): StatementText {
  const fragments = Object.freeze(text.split(/\$\d+/));
  const placeholders = text.match(/\$\d+/g) ?? [];
  placeholders.forEach((placeholder, i) => {
    if (placeholder !== `$${i + 1}`)
      throw new Error(`pglock bug: placeholder ${placeholder} out of order in: ${text}`);
  });
  const count = placeholders.length;
  return Object.freeze({
    text,
    fragments,
    bind(values: readonly string[]): Statement {
      if (values.length !== count)
        throw new Error(`pglock bug: ${values.length} values for ${count} placeholders in: ${text}`);
      return { text, fragments, values };
    },
  });
}

/**
 * Builds a {@link Statement} from SQL whose placeholders are `$1…$n`, each used once, in order.
 *
 * @example
 * ```ts
 * import { statement } from './statement.ts';
 *
 * const s = statement('SELECT pg_try_advisory_lock($1::text::bigint) AS ok', ['42']);
 * s.fragments; // ['SELECT pg_try_advisory_lock(', '::text::bigint) AS ok']
 * ```
 */
export function statement(text: string, values: readonly string[] = []): Statement {
  return statementText(text).bind(Object.freeze([...values]));
}
