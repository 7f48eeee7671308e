import { InvalidLockKeyError, lockKey } from '@pglock/core';
import { advisoryLocks, withLock } from '@pglock/pg';
import { Backdoor, countingPool } from '@pglock/test-kit';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

// docs/key-spec.md's SQL, over many names at once; NUL-free names go through text, the rest through bytes.
const byName = `SELECT ('x' || encode(substring(sha256(convert_to(n, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key
  FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i) ORDER BY i`;
const byNamespace = `SELECT ('x' || encode(substring(sha256(convert_to($2::text, 'UTF8') || '\\x00'::bytea || convert_to(n, 'UTF8'))
  FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i) ORDER BY i`;
const byBytes = `SELECT ('x' || encode(substring(sha256(decode(h, 'hex')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key
  FROM unnest($1::text[]) WITH ORDINALITY AS t(h, i) ORDER BY i`;

const name = fc.string({ unit: 'binary', minLength: 1, maxLength: 40 });
const namespace = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 20 })
  .filter((s) => !s.includes('\u0000'));
const hostile = [
  "'; DROP TABLE users; --",
  "it's",
  '"quoted"',
  'back\\slash\\\\',
  'nul\u0000inside',
  '🔒🦄 emoji',
  '$1::text',
  "E'\\x00'",
  '\u202Eright-to-left',
  'x'.repeat(10_240),
];

describe('key inputs (fast-check)', () => {
  it('every valid name gives the key the spec SQL computes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(name, { minLength: 1, maxLength: 25 }), async (names) => {
        const text = names.filter((n) => !n.includes('\u0000'));
        const fromSql = (await backdoor.query<{ key: string }>(byName, [text])).map((r) => r.key);
        expect(fromSql).toEqual(
          text.map((n) => String(lockKey(n).form === 'bigint' && (lockKey(n) as { value: bigint }).value)),
        );
        const hex = names.map((n) => Buffer.from(n, 'utf8').toString('hex'));
        const fromBytes = (await backdoor.query<{ key: string }>(byBytes, [hex])).map((r) => r.key);
        expect(fromBytes).toEqual(names.map((n) => String((lockKey(n) as { value: bigint }).value)));
      }),
      { numRuns: 40 },
    );
  });

  it('every valid namespaced name gives the key the spec SQL computes', async () => {
    await fc.assert(
      fc.asyncProperty(
        namespace,
        fc.array(
          name.filter((n) => !n.includes('\u0000')),
          { minLength: 1, maxLength: 25 },
        ),
        async (ns, names) => {
          const fromSql = (await backdoor.query<{ key: string }>(byNamespace, [names, ns])).map((r) => r.key);
          expect(fromSql).toEqual(
            names.map((n) => String((lockKey(n, { namespace: ns }) as { value: bigint }).value)),
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it('numbers, bigints and pairs in range are the key itself', () => {
    fc.assert(fc.property(fc.maxSafeInteger(), (n) => (lockKey(n) as { value: bigint }).value === BigInt(n)));
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        (n) => (lockKey(n) as { value: bigint }).value === n,
      ),
    );
    fc.assert(
      fc.property(fc.integer(), fc.integer(), (a, b) => {
        const key = lockKey({ pair: [a | 0, b | 0] });
        return key.form === 'pair' && key.pair[0] === (a | 0) && key.pair[1] === (b | 0);
      }),
    );
  });

  it('every invalid input throws InvalidLockKeyError and sends no SQL', async () => {
    const { pool, count } = countingPool({ connectionString: url, max: 1 });
    const locks = advisoryLocks(pool);
    const invalid = fc.oneof(
      fc.constant(''),
      fc.double().filter((n) => !Number.isSafeInteger(n)),
      fc.bigInt().filter((n) => n < -(2n ** 63n) || n >= 2n ** 63n),
      fc
        .tuple(fc.oneof(fc.double(), fc.bigInt(), fc.string()), fc.integer())
        .filter(([a]) => !(typeof a === 'number' && Number.isInteger(a) && a >= -(2 ** 31) && a < 2 ** 31))
        .map((pair) => ({ pair })),
      fc.integer({ min: 2 ** 31, max: 2 ** 40 }).map((a) => ({ pair: [0, a] })),
      fc.string().map((s) => `${s}\uD800`),
      fc.constantFrom(
        null,
        undefined,
        true,
        [],
        {},
        { pair: [1] },
        { pair: [1, 2, 3] },
        Symbol('k'),
        () => 1,
      ),
    );
    await fc.assert(
      fc.asyncProperty(invalid, async (input) => {
        const error = await locks.withLock(input as never, async () => 'ran').catch((e: unknown) => e);
        expect(InvalidLockKeyError.is(error)).toBe(true);
      }),
      { numRuns: 200 },
    );
    expect(count()).toBe(0);
    expect(pool.totalCount).toBe(0);
    await pool.end();
  });

  it('names with quotes, backslashes, NUL, emoji, 10 kB and SQL fragments are just names', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      for (const n of hostile) {
        const value = (lockKey(n) as { value: bigint }).value;
        const held = await withLock(pool, n, async () => backdoor.locksOn(value));
        expect(held, JSON.stringify(n.slice(0, 30))).toHaveLength(1);
        expect(await backdoor.locksOn(value)).toEqual([]);
      }
      expect(new Set(hostile.map((n) => (lockKey(n) as { value: bigint }).value)).size).toBe(hostile.length);
    } finally {
      await pool.end();
    }
  });
});
