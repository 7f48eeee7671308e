import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import vectorsFile from '../../../docs/key-vectors.json' with { type: 'json' };
// The `databaseUrl` the vitest global setup provides (declared in the test-kit, shared by all packages).
import type {} from '../../test-kit/src/provided-context.ts';
import { deriveKey, lockKey } from '../src/index.ts';
import { lockTag } from '../src/inspect-locks.ts';

interface Vector {
  name: string;
  namespace?: string;
  hashInputHex: string;
  key: string;
  classid: number;
  objid: number;
}
const vectors = vectorsFile.vectors as Vector[];

// The SQL expressions of docs/key-spec.md, verbatim apart from the parameters.
const byName = `SELECT ('x' || encode(substring(sha256(convert_to($1::text, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key`;
const byNamespace = `SELECT ('x' || encode(substring(sha256(convert_to($1::text, 'UTF8') || '\\x00'::bytea || convert_to($2::text, 'UTF8'))
        FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key`;
const byBytes = `SELECT ('x' || encode(substring(sha256(decode($1::text, 'hex')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint::text AS key`;

describe('key spec vectors', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client(inject('databaseUrl'));
    await client.connect();
  });
  afterAll(() => client.end());

  it('has vectors covering namespaces, non-ASCII, NUL and long names', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(10);
    expect(vectors.some((v) => v.namespace !== undefined)).toBe(true);
    expect(vectors.some((v) => v.name.includes('\u0000'))).toBe(true);
    expect(vectors.some((v) => [...v.name].some((c) => c.codePointAt(0)! > 127))).toBe(true);
  });

  it.each(vectors.map((v) => [JSON.stringify(v.name).slice(0, 40), v] as const))(
    '%s: deriveKey and lockKey',
    (_, v) => {
      expect(Buffer.from(v.hashInputHex, 'hex').toString('hex')).toBe(
        Buffer.concat([
          v.namespace === undefined
            ? Buffer.alloc(0)
            : Buffer.concat([Buffer.from(v.namespace, 'utf8'), Buffer.from([0])]),
          Buffer.from(v.name, 'utf8'),
        ]).toString('hex'),
      );
      expect(deriveKey(v.name, v.namespace)).toBe(BigInt(v.key));
      const key = lockKey(v.name, { namespace: v.namespace });
      expect(key).toMatchObject({ form: 'bigint', value: BigInt(v.key), name: v.name });
      expect(lockTag(key)).toEqual({ classid: v.classid, objid: v.objid, objsubid: 1 });
    },
  );

  it.each(vectors.map((v) => [JSON.stringify(v.name).slice(0, 40), v] as const))(
    '%s: the SQL expression on PostgreSQL gives the same key',
    async (_, v) => {
      const [fromBytes] = (await client.query(byBytes, [v.hashInputHex])).rows;
      expect(fromBytes.key).toBe(v.key);
      if (v.name.includes('\u0000')) return; // PostgreSQL text cannot hold NUL: the bytes form above covers it.
      const [fromText] =
        v.namespace === undefined
          ? (await client.query(byName, [v.name])).rows
          : (await client.query(byNamespace, [v.namespace, v.name])).rows;
      expect(fromText.key).toBe(v.key);
    },
  );

  it('pg_locks shows a held key with the vector classid/objid', async () => {
    const v = vectors[0]!;
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1::text::bigint)', [v.key]);
      const { rows } = await client.query(
        `SELECT classid::bigint AS classid, objid::bigint AS objid, objsubid FROM pg_locks
          WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
      );
      expect(rows).toEqual([{ classid: String(v.classid), objid: String(v.objid), objsubid: 1 }]);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
