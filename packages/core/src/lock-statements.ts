import type { LockKey } from './lock-key.ts';
import { type Statement, type StatementText, statementText } from './statement.ts';

/** Where a lock lives: until COMMIT/ROLLBACK, or until released on (or the end of) the connection. */
export type LockScope = 'transaction' | 'session';

/** What a statement does with its keys. */
type Kind = 'wait' | 'timed' | 'try' | 'unlock' | 'release';

/** One call's keys of one lock space, with the SQL fragments that feed them to the lock functions. */
interface KeyGroup {
  readonly form: 'bigint' | 'pair';
  readonly values: readonly string[];
}

const SOURCES = {
  bigint: { source: 'unnest($N::text::bigint[]) WITH ORDINALITY AS u(k, i)', args: 'u.k' },
  pair: {
    source: 'unnest($N::text::int4[], $N::text::int4[]) WITH ORDINALITY AS u(a, b, i)',
    args: 'u.a, u.b',
  },
} as const;

/**
 * Splits canonical keys into their lock spaces (bigint keys first, then pairs) as array parameters:
 * `unnest` returns elements in array order, which makes the canonical order the acquisition order
 * inside one statement. Only validated integers reach the literal: digits, minus signs and commas.
 */
function groups(keys: readonly LockKey[]): KeyGroup[] {
  const bigints: string[] = [];
  const firsts: number[] = [];
  const seconds: number[] = [];
  for (const key of keys) {
    if (key.form === 'bigint') bigints.push(String(key.value));
    else {
      firsts.push(key.pair[0]);
      seconds.push(key.pair[1]);
    }
  }
  const result: KeyGroup[] = [];
  if (bigints.length > 0) result.push({ form: 'bigint', values: [`{${bigints.join(',')}}`] });
  if (firsts.length > 0)
    result.push({ form: 'pair', values: [`{${firsts.join(',')}}`, `{${seconds.join(',')}}`] });
  return result;
}

/**
 * The lock function's arguments with the first one evaluated only after `lock_timeout` is set to
 * `budget`: a CASE evaluates its condition first (PostgreSQL documents CASE as the way to force an
 * evaluation order), and `set_config` never returns NULL, so the argument is unchanged.
 */
function afterBudget(args: string, budget: string): string {
  const comma = args.indexOf(',');
  const first = comma < 0 ? args : args.slice(0, comma);
  const rest = comma < 0 ? '' : args.slice(comma);
  return `CASE WHEN set_config('lock_timeout', ${budget}, true) IS NOT NULL THEN ${first} END${rest}`;
}

function numbered(text: string): string {
  let n = 1;
  return text.replace(/\$N/g, () => `$${n++}`);
}

function fn(scope: LockScope, shared: boolean, kind: Kind): string {
  const xact = scope === 'transaction' ? '_xact' : '';
  const mode = shared ? '_shared' : '';
  if (kind === 'unlock' || kind === 'release') return `pg_advisory_unlock${mode}`;
  return kind === 'try' ? `pg_try_advisory${xact}_lock${mode}` : `pg_advisory${xact}_lock${mode}`;
}

// The SQL text depends only on the call's shape (scope, mode, kind, lock space, one key or several),
// never on key values, so each text is built and parsed once, kept by a small integer of the shape.
const KINDS: readonly Kind[] = ['wait', 'timed', 'try', 'unlock', 'release'];
const texts: (StatementText | undefined)[] = [];

function shapeOf(
  scope: LockScope,
  shared: boolean,
  kind: Kind,
  form: 'bigint' | 'pair',
  single: boolean,
): StatementText {
  const id =
    (KINDS.indexOf(kind) << 4) |
    (scope === 'session' ? 8 : 0) |
    (shared ? 4 : 0) |
    (form === 'pair' ? 2 : 0) |
    (single ? 1 : 0);
  let text = texts[id];
  if (text === undefined) {
    text = statementText(
      numbered(single ? singleText(scope, shared, kind, form) : groupText(scope, shared, kind, form)),
    );
    texts[id] = text;
  }
  return text;
}

/** The values of one key for a single-key statement: the bigint, or the pair's two int4. */
function keyValues(key: LockKey): string[] {
  return key.form === 'bigint' ? [String(key.value)] : [String(key.pair[0]), String(key.pair[1])];
}

function singleText(scope: LockScope, shared: boolean, kind: Kind, form: 'bigint' | 'pair'): string {
  // A plain cast of the parameter, not `::text::bigint`: an untyped string parameter is read as a
  // bigint at bind time, and one typed text is cast once; the server spends less on either than on
  // a second conversion node (measured in the bench's scenario 1).
  const args = form === 'bigint' ? '$N::bigint' : '$N::int4, $N::int4';
  const lock = fn(scope, shared, kind);
  switch (kind) {
    case 'wait':
      // Not `SELECT 1 FROM lock(…)`: a function in FROM is a function scan that stores its one row
      // in a tuplestore; in the select list it is a plain call. `IS NOT NULL` gives the void result a
      // type every driver reads (Prisma cannot read a void column); it is always true.
      return `SELECT ${lock}(${args}) IS NOT NULL AS locked`;
    case 'timed':
      // See docs/protocol.md for the order: the FROM row (the caller's value) exists before the select
      // list is computed; each CASE evaluates its condition before its result, and arguments are
      // evaluated before the function: save, set the budget, lock, restore.
      return (
        "SELECT 1 AS locked, set_config('lock_timeout', " +
        `CASE WHEN ${lock}(${afterBudget(args, '$N::text')}) IS NULL THEN p.lock_timeout ELSE p.lock_timeout END, true) AS restored ` +
        "FROM current_setting('lock_timeout') AS p(lock_timeout)"
      );
    case 'try':
      return `SELECT 1 AS i, ${lock}(${args}) AS ok`;
    default:
      return groupText(scope, shared, kind, form);
  }
}

function groupText(scope: LockScope, shared: boolean, kind: Kind, form: 'bigint' | 'pair'): string {
  const { source, args } = SOURCES[form];
  const lock = fn(scope, shared, kind);
  switch (kind) {
    case 'wait':
      return `SELECT count(*)::int AS locked FROM (SELECT ${lock}(${args}) FROM ${source}) AS l`;
    case 'timed': {
      // As the single-key form, once per row of `source` (array order): each key gets what is left
      // of the budget since `p.started`; the aggregate has consumed every row before the restore.
      const left =
        'greatest(1, ceil($N::text::int - extract(epoch FROM clock_timestamp() - p.started) * 1000))::bigint::text';
      return (
        "SELECT count(*)::int AS locked, set_config('lock_timeout', " +
        `CASE WHEN count(${lock}(${afterBudget(args, left)})) IS NULL THEN min(p.lock_timeout) ELSE min(p.lock_timeout) END, true) AS restored ` +
        `FROM ROWS FROM (current_setting('lock_timeout'), clock_timestamp()) AS p(lock_timeout, started), ${source}`
      );
    }
    case 'try':
      return `SELECT u.i::int AS i, ${lock}(${args}) AS ok FROM ${source}`;
    case 'release':
      return `SELECT u.i::int AS i, ${lock}(${args}) AS ok FROM ${source}`;
    case 'unlock': {
      const mode = shared ? 'ShareLock' : 'ExclusiveLock';
      const tag =
        form === 'bigint'
          ? 'l.objsubid = 1 AND l.classid = ((u.k >> 32) & 4294967295)::oid AND l.objid = (u.k & 4294967295)::oid'
          : 'l.objsubid = 2 AND l.classid = u.a::oid AND l.objid = u.b::oid';
      return (
        `SELECT u.i::int AS i, ${lock}(${args}) AS ok FROM ${source} ` +
        "WHERE EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() " +
        `AND l.granted AND l.mode = '${mode}' AND ${tag})`
      );
    }
  }
}

/** Locks of one call, one statement per lock space. */
export interface LockStatements {
  /** Waits for every key of each group (without limit). */
  readonly wait: readonly Statement[];
  /** Tries every key of each group once; rows `{ i, ok }`, `i` 1-based within the group. */
  readonly attempt: readonly Statement[];
}

/**
 * The statements that wait for, or try, `keys`. One key (the common case) takes a plain parameter
 * instead of an array, which is cheaper for the server to plan.
 *
 * @example
 * ```ts
 * import { lockRequest, lockStatements } from '@pglock/core/internal';
 *
 * const [wait] = lockStatements(lockRequest('job').keys, 'transaction', false, 'wait');
 * ```
 */
export function lockStatements(
  keys: readonly LockKey[],
  scope: LockScope,
  shared: boolean,
  kind: 'wait' | 'try' | 'unlock' | 'release',
): readonly Statement[] {
  const only = keys.length === 1 ? keys[0] : undefined;
  if (only !== undefined && (kind === 'wait' || kind === 'try')) {
    return [shapeOf(scope, shared, kind, only.form, true).bind(keyValues(only))];
  }
  return groups(keys).map((g) => shapeOf(scope, shared, kind, g.form, false).bind(g.values));
}

/**
 * The one statement that waits without limit for `keys`, all of one lock space (as
 * {@link keysBySpace} splits them): `lockStatements(keys, …, 'wait')[0]` without the array.
 */
export function waitStatement(keys: readonly LockKey[], scope: LockScope, shared: boolean): Statement {
  const only = keys.length === 1 ? keys[0] : undefined;
  if (only !== undefined) return shapeOf(scope, shared, 'wait', only.form, true).bind(keyValues(only));
  const [group] = groups(keys);
  if (group === undefined || keys.some((key) => key.form !== group.form)) {
    throw new Error('pglock bug: one lock space per wait statement');
  }
  return shapeOf(scope, shared, 'wait', group.form, false).bind(group.values);
}

/**
 * The statement that tries one key once, without waiting: a row `{ i, ok }`, `ok` true when held.
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core/internal';
 * import { tryStatement } from './lock-statements.ts';
 *
 * const key = lockRequest('job').keys[0]!;
 * const statement = tryStatement(key, 'transaction', false);
 * ```
 */
export function tryStatement(key: LockKey, scope: LockScope, shared: boolean): Statement {
  return shapeOf(scope, shared, 'try', key.form, true).bind(keyValues(key));
}

/**
 * A bounded wait: like `lockStatements(…, 'wait')`, but each statement sets `lock_timeout` to the
 * budget left before each key and restores the caller's value afterwards, in the one statement
 * (one round trip). See docs/protocol.md for the evaluation-order argument; `set_config(…, true)`
 * lasts until the end of the transaction at most, so an error part-way cannot leak the setting.
 *
 * @example
 * ```ts
 * import { lockRequest, timedLockStatement } from '@pglock/core/internal';
 *
 * const key = lockRequest('job').keys;
 * const statement = timedLockStatement(key, 'transaction', false, 1_000);
 * ```
 */
export function timedLockStatement(
  keys: readonly LockKey[],
  scope: LockScope,
  shared: boolean,
  budgetMs: number,
): Statement {
  const only = keys.length === 1 ? keys[0] : undefined;
  if (only !== undefined) {
    const values = keyValues(only);
    values.unshift(String(budgetMs));
    return shapeOf(scope, shared, 'timed', only.form, true).bind(values);
  }
  const [group] = groups(keys);
  if (group === undefined || keys.some((key) => key.form !== group.form)) {
    throw new Error('pglock bug: one lock space per timed statement');
  }
  return shapeOf(scope, shared, 'timed', group.form, false).bind([String(budgetMs), ...group.values]);
}

/** Keys split by lock space, in acquisition order (bigint keys, then pairs). */
export function keysBySpace(keys: readonly LockKey[]): readonly (readonly LockKey[])[] {
  const bigints = keys.filter((key) => key.form === 'bigint');
  const pairs = keys.filter((key) => key.form === 'pair');
  return [bigints, pairs].filter((space) => space.length > 0);
}

/**
 * Releases session locks of `keys` that this connection holds, and only those (checked in
 * `pg_locks`), so a cleanup after a half-finished acquisition cannot release someone else's count.
 *
 * @example
 * ```ts
 * import { lockRequest, sessionUnlockStatements } from '@pglock/core/internal';
 *
 * const [unlock] = sessionUnlockStatements(lockRequest('leader').keys, false);
 * ```
 */
export function sessionUnlockStatements(keys: readonly LockKey[], shared: boolean): readonly Statement[] {
  return lockStatements(keys, 'session', shared, 'unlock');
}

/**
 * Unconditional release of session locks of `keys` (rows `{ i, ok }`; `ok` false where not held).
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core/internal';
 * import { releaseStatements } from './lock-statements.ts';
 *
 * const [release] = releaseStatements(lockRequest('leader').keys, false);
 * ```
 */
export function releaseStatements(keys: readonly LockKey[], shared: boolean): readonly Statement[] {
  return lockStatements(keys, 'session', shared, 'release');
}

/** `SELECT pg_backend_pid()`: read only where a cancel by pid or the pooler check needs it. */
export const backendPidStatement: Statement = statementText('SELECT pg_backend_pid() AS pid').bind([]);
