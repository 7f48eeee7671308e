import { describe, expect, it } from 'vitest';
import { type LockKey, lockKey } from '../src/index.ts';
import {
  backendPidStatement,
  keysBySpace,
  type LockScope,
  lockStatements,
  releaseStatements,
  sessionUnlockStatements,
  timedLockStatement,
  tryStatement,
  waitStatement,
} from '../src/lock-statements.ts';
import { type Statement, statementText } from '../src/statement.ts';

const big = (...values: bigint[]): LockKey[] => values.map((value) => lockKey(value));
const pairs = (...values: [number, number][]): LockKey[] => values.map((pair) => lockKey({ pair }));

/** Text and values, after checking that the fragments are the text split at `$1…$n`, one per value. */
function sql(statement: Statement): { text: string; values: readonly string[] } {
  expect(statement.fragments).toHaveLength(statement.values.length + 1);
  expect(statement.fragments.map((f, i) => (i === 0 ? f : `$${i}${f}`)).join('')).toBe(statement.text);
  expect(statementText(statement.text).fragments).toEqual(statement.fragments);
  return { text: statement.text, values: statement.values };
}

const BIGINTS = 'unnest($1::text::bigint[]) WITH ORDINALITY AS u(k, i)';
const PAIRS = 'unnest($1::text::int4[], $2::text::int4[]) WITH ORDINALITY AS u(a, b, i)';

describe('lockStatements: one key', () => {
  it.each<[LockScope, boolean, string]>([
    ['transaction', false, 'pg_advisory_xact_lock'],
    ['transaction', true, 'pg_advisory_xact_lock_shared'],
    ['session', false, 'pg_advisory_lock'],
    ['session', true, 'pg_advisory_lock_shared'],
  ])('wait, %s, shared %s: %s with one bigint parameter', (scope, shared, fn) => {
    const [wait, ...rest] = lockStatements(big(42n), scope, shared, 'wait');
    expect(rest).toEqual([]);
    expect(sql(wait!)).toEqual({ text: `SELECT ${fn}($1::bigint) IS NOT NULL AS locked`, values: ['42'] });
  });

  it.each<[LockScope, boolean, string]>([
    ['transaction', false, 'pg_try_advisory_xact_lock'],
    ['transaction', true, 'pg_try_advisory_xact_lock_shared'],
    ['session', false, 'pg_try_advisory_lock'],
    ['session', true, 'pg_try_advisory_lock_shared'],
  ])('try, %s, shared %s: %s, a row { i, ok }', (scope, shared, fn) => {
    const statements = lockStatements(big(-(2n ** 63n)), scope, shared, 'try');
    expect(statements.map(sql)).toEqual([
      { text: `SELECT 1 AS i, ${fn}($1::bigint) AS ok`, values: ['-9223372036854775808'] },
    ]);
    expect(tryStatement(lockKey(-(2n ** 63n)), scope, shared)).toEqual(statements[0]);
  });

  it('a pair key takes its two int4 as two parameters', () => {
    expect(lockStatements(pairs([1, -2]), 'transaction', false, 'wait').map(sql)).toEqual([
      { text: 'SELECT pg_advisory_xact_lock($1::int4, $2::int4) IS NOT NULL AS locked', values: ['1', '-2'] },
    ]);
    expect(sql(tryStatement(lockKey({ pair: [-2_147_483_648, 2_147_483_647] }), 'session', true))).toEqual({
      text: 'SELECT 1 AS i, pg_try_advisory_lock_shared($1::int4, $2::int4) AS ok',
      values: ['-2147483648', '2147483647'],
    });
  });
});

describe('lockStatements: several keys', () => {
  it('one statement per lock space, bigint keys first, each key space as array parameters in the given order', () => {
    const keys = [...big(1n, -2n), ...pairs([1, 3], [2, -4])];
    expect(lockStatements(keys, 'transaction', false, 'try').map(sql)).toEqual([
      {
        text: `SELECT u.i::int AS i, pg_try_advisory_xact_lock(u.k) AS ok FROM ${BIGINTS}`,
        values: ['{1,-2}'],
      },
      {
        text: `SELECT u.i::int AS i, pg_try_advisory_xact_lock(u.a, u.b) AS ok FROM ${PAIRS}`,
        values: ['{1,2}', '{3,-4}'],
      },
    ]);
  });

  it('wait counts the locked rows, so the lock function runs once per key', () => {
    expect(lockStatements(big(5n, 6n), 'session', true, 'wait').map(sql)).toEqual([
      {
        text: `SELECT count(*)::int AS locked FROM (SELECT pg_advisory_lock_shared(u.k) FROM ${BIGINTS}) AS l`,
        values: ['{5,6}'],
      },
    ]);
    expect(lockStatements(pairs([1, 2], [3, 4]), 'transaction', false, 'wait').map(sql)).toEqual([
      {
        text: `SELECT count(*)::int AS locked FROM (SELECT pg_advisory_xact_lock(u.a, u.b) FROM ${PAIRS}) AS l`,
        values: ['{1,3}', '{2,4}'],
      },
    ]);
  });

  it('no keys, no statements', () => {
    expect(lockStatements([], 'transaction', false, 'wait')).toEqual([]);
  });
});

describe('waitStatement', () => {
  it('is the one wait statement of keys of one lock space', () => {
    expect(waitStatement(big(7n), 'transaction', false)).toEqual(
      lockStatements(big(7n), 'transaction', false, 'wait')[0],
    );
    expect(sql(waitStatement(pairs([1, 2], [3, 4]), 'session', false))).toEqual({
      text: `SELECT count(*)::int AS locked FROM (SELECT pg_advisory_lock(u.a, u.b) FROM ${PAIRS}) AS l`,
      values: ['{1,3}', '{2,4}'],
    });
  });

  it('refuses no keys, or keys of both lock spaces (a bug in its caller)', () => {
    expect(() => waitStatement([], 'transaction', false)).toThrow(
      'pglock bug: one lock space per wait statement',
    );
    expect(() => waitStatement([...big(1n), ...pairs([1, 2])], 'transaction', false)).toThrow(
      'pglock bug: one lock space per wait statement',
    );
  });
});

describe('timedLockStatement', () => {
  it('one key: sets lock_timeout to the budget ($1) before the lock, and restores the caller’s value', () => {
    expect(sql(timedLockStatement(big(42n), 'transaction', false, 500))).toEqual({
      text:
        "SELECT 1 AS locked, set_config('lock_timeout', CASE WHEN pg_advisory_xact_lock(" +
        "CASE WHEN set_config('lock_timeout', $1::text, true) IS NOT NULL THEN $2::bigint END) " +
        'IS NULL THEN p.lock_timeout ELSE p.lock_timeout END, true) AS restored ' +
        "FROM current_setting('lock_timeout') AS p(lock_timeout)",
      values: ['500', '42'],
    });
    expect(sql(timedLockStatement(pairs([1, 2]), 'session', true, 1)).text).toContain(
      "pg_advisory_lock_shared(CASE WHEN set_config('lock_timeout', $1::text, true) IS NOT NULL THEN $2::int4 END, $3::int4)",
    );
  });

  it('several keys: each key gets what is left of the one budget', () => {
    const left =
      'greatest(1, ceil($1::text::int - extract(epoch FROM clock_timestamp() - p.started) * 1000))::bigint::text';
    const lockTimeout =
      "ROWS FROM (current_setting('lock_timeout'), clock_timestamp()) AS p(lock_timeout, started)";
    expect(sql(timedLockStatement(big(1n, -2n), 'session', true, 2_000))).toEqual({
      text:
        "SELECT count(*)::int AS locked, set_config('lock_timeout', CASE WHEN count(pg_advisory_lock_shared(" +
        `CASE WHEN set_config('lock_timeout', ${left}, true) IS NOT NULL THEN u.k END)) ` +
        'IS NULL THEN min(p.lock_timeout) ELSE min(p.lock_timeout) END, true) AS restored ' +
        `FROM ${lockTimeout}, unnest($2::text::bigint[]) WITH ORDINALITY AS u(k, i)`,
      values: ['2000', '{1,-2}'],
    });
    expect(sql(timedLockStatement(pairs([1, 3], [2, -4]), 'transaction', false, 9))).toEqual({
      text:
        "SELECT count(*)::int AS locked, set_config('lock_timeout', CASE WHEN count(pg_advisory_xact_lock(" +
        `CASE WHEN set_config('lock_timeout', ${left}, true) IS NOT NULL THEN u.a END, u.b)) ` +
        'IS NULL THEN min(p.lock_timeout) ELSE min(p.lock_timeout) END, true) AS restored ' +
        `FROM ${lockTimeout}, unnest($2::text::int4[], $3::text::int4[]) WITH ORDINALITY AS u(a, b, i)`,
      values: ['9', '{1,2}', '{3,-4}'],
    });
  });

  it('refuses no keys, or keys of both lock spaces', () => {
    expect(() => timedLockStatement([], 'transaction', false, 1)).toThrow(
      'pglock bug: one lock space per timed statement',
    );
    expect(() => timedLockStatement([...pairs([1, 2]), ...big(1n)], 'session', false, 1)).toThrow(
      'pglock bug: one lock space per timed statement',
    );
  });
});

describe('keysBySpace', () => {
  it('splits keys into bigint keys then pairs, in their order, leaving out an empty space', () => {
    const [p1, p2] = pairs([2, 2], [1, 1]);
    const [b1, b2] = big(9n, 3n);
    expect(keysBySpace([p1!, b1!, p2!, b2!])).toEqual([
      [b1, b2],
      [p1, p2],
    ]);
    expect(keysBySpace([p1!])).toEqual([[p1]]);
    expect(keysBySpace([b2!])).toEqual([[b2]]);
    expect(keysBySpace([])).toEqual([]);
  });
});

describe('session release statements', () => {
  it('sessionUnlockStatements releases only what this backend holds in that mode, per pg_locks', () => {
    const held = (mode: string, tag: string) =>
      "WHERE EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() " +
      `AND l.granted AND l.mode = '${mode}' AND ${tag})`;
    // A bigint key is the lock tag (classid, objid) = (high, low 32 bits) with objsubid 1; a pair is (a, b), 2.
    const bigintTag =
      'l.objsubid = 1 AND l.classid = ((u.k >> 32) & 4294967295)::oid AND l.objid = (u.k & 4294967295)::oid';
    expect(sessionUnlockStatements(big(42n), false).map(sql)).toEqual([
      {
        text: `SELECT u.i::int AS i, pg_advisory_unlock(u.k) AS ok FROM ${BIGINTS} ${held('ExclusiveLock', bigintTag)}`,
        values: ['{42}'],
      },
    ]);
    expect(sessionUnlockStatements([...big(1n), ...pairs([1, 3], [2, -4])], true).map(sql)).toEqual([
      {
        text: `SELECT u.i::int AS i, pg_advisory_unlock_shared(u.k) AS ok FROM ${BIGINTS} ${held('ShareLock', bigintTag)}`,
        values: ['{1}'],
      },
      {
        text:
          `SELECT u.i::int AS i, pg_advisory_unlock_shared(u.a, u.b) AS ok FROM ${PAIRS} ` +
          held('ShareLock', 'l.objsubid = 2 AND l.classid = u.a::oid AND l.objid = u.b::oid'),
        values: ['{1,2}', '{3,-4}'],
      },
    ]);
  });

  it('releaseStatements releases unconditionally, rows { i, ok }', () => {
    expect(releaseStatements(big(1n, -2n), false).map(sql)).toEqual([
      { text: `SELECT u.i::int AS i, pg_advisory_unlock(u.k) AS ok FROM ${BIGINTS}`, values: ['{1,-2}'] },
    ]);
    expect(releaseStatements(pairs([5, 6]), true).map(sql)).toEqual([
      {
        text: `SELECT u.i::int AS i, pg_advisory_unlock_shared(u.a, u.b) AS ok FROM ${PAIRS}`,
        values: ['{5}', '{6}'],
      },
    ]);
  });
});

describe('keys are parameters, never SQL', () => {
  const hostile = "x'); SELECT pg_terminate_backend(pg_backend_pid()); --";
  const named = lockKey(hostile, { namespace: "ns'; DROP TABLE t; --" });
  const builders: [string, (keys: LockKey[]) => readonly Statement[]][] = [
    ['wait', (keys) => lockStatements(keys, 'transaction', false, 'wait')],
    ['try', (keys) => lockStatements(keys, 'session', true, 'try')],
    ['waitStatement', (keys) => [waitStatement(keys, 'session', false)]],
    ['timed', (keys) => [timedLockStatement(keys, 'transaction', true, 1_000)]],
    ['unlock', (keys) => sessionUnlockStatements(keys, false)],
    ['release', (keys) => releaseStatements(keys, true)],
  ];

  it.each(builders)(
    '%s: a name with quotes and semicolons reaches SQL only as its hash, bound',
    (_, build) => {
      for (const keys of [[named], [named, lockKey(`${hostile}2`)]]) {
        for (const s of build(keys)) {
          expect(s.text).not.toContain('pg_terminate_backend');
          expect(s.text).not.toContain('DROP');
          for (const value of s.values) expect(value).toMatch(/^(\{-?\d+(,-?\d+)*\}|-?\d+)$/);
          expect(s.values.join(',')).toContain(String(named.form === 'bigint' && named.value));
        }
      }
    },
  );

  it.each(builders)('%s: the text depends on the shape of the call only, never on key values', (_, build) => {
    const text = (keys: LockKey[]) => build(keys).map((s) => s.text);
    expect(text(big(1n))).toEqual(text([named]));
    expect(text(big(1n, 2n))).toEqual(text(big(-(2n ** 63n), 2n ** 63n - 1n, 0n)));
    expect(text(pairs([0, 0], [1, 1]))).toEqual(text(pairs([-5, 7], [2_147_483_647, -2_147_483_648])));
    // Built once per shape: the same fragments object each call.
    expect(build(big(1n))[0]!.fragments).toBe(build(big(2n))[0]!.fragments);
  });
});

describe('backendPidStatement', () => {
  it('reads the backend pid, with no parameters', () => {
    expect(sql(backendPidStatement)).toEqual({ text: 'SELECT pg_backend_pid() AS pid', values: [] });
  });
});
