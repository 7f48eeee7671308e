import type { LockKey } from './lock-key.ts';
import { type Statement, statement } from './statement.ts';

/** Where a lock lives: until COMMIT/ROLLBACK, or until released on (or the end of) the connection. */
export type LockScope = 'transaction' | 'session';

/** One call's keys of one lock space, with the SQL fragments that feed them to the lock functions. */
interface KeyGroup {
  readonly source: string;
  readonly args: string;
  readonly values: readonly string[];
}

/**
 * Splits canonical keys into their lock spaces (bigint keys first, then pairs) and renders each as
 * array parameters: `unnest` returns elements in array order, which is what makes the canonical
 * order the acquisition order inside one statement.
 */
function groups(keys: readonly LockKey[]): KeyGroup[] {
  const bigints = keys.flatMap((key) => (key.form === 'bigint' ? [key.value] : []));
  const pairs = keys.flatMap((key) => (key.form === 'pair' ? [key.pair] : []));
  const result: KeyGroup[] = [];
  if (bigints.length > 0) {
    result.push({
      source: 'unnest($N::text::bigint[]) WITH ORDINALITY AS s(k, i)',
      args: 'u.k',
      values: [arrayLiteral(bigints)],
    });
  }
  if (pairs.length > 0) {
    result.push({
      source: 'unnest($N::text::int4[], $N::text::int4[]) WITH ORDINALITY AS s(a, b, i)',
      args: 'u.a, u.b',
      values: [arrayLiteral(pairs.map((p) => p[0])), arrayLiteral(pairs.map((p) => p[1]))],
    });
  }
  return result;
}

// Only validated integers reach here, so the literal holds digits, minus signs and commas alone.
function arrayLiteral(values: readonly (bigint | number)[]): string {
  return `{${values.join(',')}}`;
}

function numbered(text: string, first = 1): string {
  let n = first;
  return text.replace(/\$N/g, () => `$${n++}`);
}

function fn(scope: LockScope, shared: boolean, kind: 'lock' | 'try' | 'unlock'): string {
  const xact = scope === 'transaction' ? '_xact' : '';
  const mode = shared ? '_shared' : '';
  if (kind === 'unlock') return `pg_advisory_unlock${mode}`;
  return kind === 'try' ? `pg_try_advisory${xact}_lock${mode}` : `pg_advisory${xact}_lock${mode}`;
}

/** Locks of one call, grouped into one statement per lock space. */
export interface LockStatements {
  /** Waits for every key of each group (without limit, or within `timeoutMs` overall). */
  readonly wait: readonly Statement[];
  /** Tries every key of each group once; rows `{ i, ok }`, `i` 1-based within the group. */
  readonly attempt: readonly Statement[];
}

// The SQL text depends only on the call's shape (scope, mode, how it waits, which lock spaces, one key
// or several), never on key values, so each text is built once.
const texts = new Map<string, string>();
function text(shape: string, build: () => string): string {
  let built = texts.get(shape);
  if (built === undefined) {
    built = numbered(build());
    texts.set(shape, built);
  }
  return built;
}

/**
 * The SQL for taking `keys`. A bounded wait sets `lock_timeout` before each key and restores the
 * caller's value afterwards, in the one statement (one round trip):
 *
 * - `prev` (a MATERIALIZED CTE, so it runs once and first) saves the current `lock_timeout` (and,
 *   for several keys, computes the deadline);
 * - the lock function is called in the target list of a query that reads rows produced by
 *   `set_config(..., true)`: with one key, from a MATERIALIZED CTE that reads `prev`; with several,
 *   from a subquery with volatile functions in its target list, which PostgreSQL never flattens, so
 *   each row's remaining budget is set before the outer target list locks that row's key;
 * - the final aggregate runs after every lock call and puts the saved value back.
 *
 * `set_config(..., is_local => true)` lasts until the end of the transaction at most (the statement,
 * in autocommit), so an error part-way (55P03, a cancel) cannot leak the setting either: the failed
 * transaction's local settings are discarded with it. One key (the common case) takes a plain
 * parameter instead of an array, which is cheaper for the server to plan.
 *
 * @example
 * ```ts
 * import { lockRequest, lockStatements } from '@pglock/core';
 *
 * const { wait } = lockStatements(lockRequest('job').keys, 'transaction', false, 1_000);
 * ```
 */
export function lockStatements(
  keys: readonly LockKey[],
  scope: LockScope,
  shared: boolean,
  timeoutMs: number | undefined,
): LockStatements {
  const lock = fn(scope, shared, 'lock');
  const attempt = fn(scope, shared, 'try');
  const only = keys.length === 1 ? keys[0] : undefined;
  if (only !== undefined) {
    const args = only.form === 'bigint' ? '$N::text::bigint' : '$N::text::int4, $N::text::int4';
    const values =
      only.form === 'bigint' ? [String(only.value)] : [String(only.pair[0]), String(only.pair[1])];
    const shape = `${lock}|${only.form}`;
    return {
      wait: [
        timeoutMs === undefined
          ? statement(
              text(`wait|${shape}`, () => `SELECT 1 AS locked FROM ${lock}(${args})`),
              values,
            )
          : statement(
              text(
                `timed|${shape}`,
                () =>
                  "WITH prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS lock_timeout), " +
                  "budget AS MATERIALIZED (SELECT set_config('lock_timeout', $N::text, true) AS ms FROM prev), " +
                  `locked AS MATERIALIZED (SELECT ${lock}(${args}) FROM budget) ` +
                  "SELECT count(*)::int AS locked, set_config('lock_timeout', (SELECT lock_timeout FROM prev), true) AS restored FROM locked",
              ),
              [String(timeoutMs), ...values],
            ),
      ],
      attempt: [
        statement(
          text(`try|${shape}`, () => `SELECT 1 AS i, ${attempt}(${args}) AS ok`),
          values,
        ),
      ],
    };
  }
  return {
    wait: groups(keys).map((g) =>
      timeoutMs === undefined
        ? statement(
            text(
              `wait|${lock}|${g.args}`,
              () =>
                `SELECT count(*)::int AS locked FROM (SELECT ${lock}(${g.args}) FROM ${g.source.replace(' AS s', ' AS u')}) AS l`,
            ),
            g.values,
          )
        : statement(
            text(
              `timed|${lock}|${g.args}`,
              () =>
                'WITH prev AS MATERIALIZED (' +
                "SELECT current_setting('lock_timeout') AS lock_timeout, clock_timestamp() + $N::text::int * interval '1 millisecond' AS deadline" +
                '), locked AS MATERIALIZED (' +
                `SELECT ${lock}(${g.args}) FROM (` +
                "SELECT s.*, set_config('lock_timeout', greatest(1, ceil(extract(epoch FROM p.deadline - clock_timestamp()) * 1000))::bigint::text, true) AS budget " +
                `FROM prev AS p, ${g.source}` +
                ') AS u' +
                ") SELECT count(*)::int AS locked, set_config('lock_timeout', (SELECT lock_timeout FROM prev), true) AS restored FROM locked",
            ),
            [String(timeoutMs), ...g.values],
          ),
    ),
    attempt: groups(keys).map((g) =>
      statement(
        text(
          `try|${attempt}|${g.args}`,
          () =>
            `SELECT u.i::int AS i, ${attempt}(${g.args}) AS ok FROM ${g.source.replace(' AS s', ' AS u')}`,
        ),
        g.values,
      ),
    ),
  };
}

/**
 * Releases session locks of `keys` that this connection holds, and only those (checked in
 * `pg_locks`), so a cleanup after a half-finished acquisition cannot release someone else's count.
 * Rows `{ i, ok }` for the keys that were held.
 *
 * @example
 * ```ts
 * import { lockRequest, sessionUnlockStatements } from '@pglock/core';
 *
 * const [unlock] = sessionUnlockStatements(lockRequest('leader').keys, false);
 * ```
 */
export function sessionUnlockStatements(keys: readonly LockKey[], shared: boolean): readonly Statement[] {
  const unlock = fn('session', shared, 'unlock');
  const mode = shared ? 'ShareLock' : 'ExclusiveLock';
  return groups(keys).map((g) => {
    const tag =
      g.args === 'u.k'
        ? 'l.objsubid = 1 AND l.classid = ((u.k >> 32) & 4294967295)::oid AND l.objid = (u.k & 4294967295)::oid'
        : 'l.objsubid = 2 AND l.classid = u.a::oid AND l.objid = u.b::oid';
    return statement(
      numbered(
        `SELECT u.i::int AS i, ${unlock}(${g.args}) AS ok FROM ${g.source.replace(' AS s', ' AS u')} ` +
          "WHERE EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() " +
          `AND l.granted AND l.mode = '${mode}' AND ${tag})`,
      ),
      g.values,
    );
  });
}

/**
 * Unconditional release of session locks of `keys` (rows `{ i, ok }`; `ok` false where not held).
 *
 * @example
 * ```ts
 * import { lockRequest, releaseStatements } from '@pglock/core';
 *
 * const [release] = releaseStatements(lockRequest('leader').keys, false);
 * ```
 */
export function releaseStatements(keys: readonly LockKey[], shared: boolean): readonly Statement[] {
  const unlock = fn('session', shared, 'unlock');
  return groups(keys).map((g) =>
    statement(
      numbered(`SELECT u.i::int AS i, ${unlock}(${g.args}) AS ok FROM ${g.source.replace(' AS s', ' AS u')}`),
      g.values,
    ),
  );
}

/** `SELECT pg_backend_pid()`: used only when cancelling a wait needs the server pid. */
export const backendPidStatement: Statement = statement('SELECT pg_backend_pid() AS pid');
