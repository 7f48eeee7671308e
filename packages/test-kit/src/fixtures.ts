import { randomUUID } from 'node:crypto';
import { lockKey } from '@pglock/core';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { Backdoor } from './backdoor.ts';
import type {} from './provided-context.ts';

/** What {@link useLockTestFixtures} gives a test file. */
export interface LockTestFixtures {
  readonly url: string;
  /** The raw connection that checks `pg_locks` (open between beforeAll and afterAll). */
  readonly backdoor: Backdoor;
  /** A pg.Pool on the test database (max 2 by default), ended after the test. */
  newPool(config?: pg.PoolConfig): pg.Pool;
  /** A lock name no other test uses, and its bigint key for `pg_locks` checks. */
  unique(label: string): { name: string; key: bigint };
}

/**
 * The hooks most direct-API test files repeat: a backdoor connection, pools closed after each test
 * (idle clients ended by the server must not crash the run), and unique lock names.
 */
export function useLockTestFixtures(prefix: string): LockTestFixtures {
  const url = inject('databaseUrl');
  let backdoor: Backdoor | undefined;
  const pools: pg.Pool[] = [];
  beforeAll(async () => {
    backdoor = await Backdoor.open(url);
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  afterAll(() => backdoor?.close());
  return {
    url,
    get backdoor() {
      if (!backdoor) throw new Error('backdoor used outside a test');
      return backdoor;
    },
    newPool(config = {}) {
      const pool = new pg.Pool({ connectionString: url, max: 2, ...config });
      pool.on('error', () => undefined);
      pools.push(pool);
      return pool;
    },
    unique(label) {
      const name = `${prefix}:${label}:${randomUUID()}`;
      return { name, key: (lockKey(name) as { value: bigint }).value };
    },
  };
}
