import { Backdoor, runConformance } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AdvisoryLockError, acquireSessionLock, lockKey } from '../src/index.ts';
import { poolHarness } from './harness.ts';

const bouncer = inject('pgbouncer');
const missing = 'missing' in bouncer ? bouncer.missing : undefined;

if ('transactionUrl' in bouncer) {
  runConformance(poolHarness, { url: bouncer.transactionUrl, label: 'via PgBouncer (transaction pooling)' });
}

describe.skipIf(missing)(`session locks behind PgBouncer${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const urls = bouncer as { transactionUrl: string; sessionUrl: string };
  let backdoor: Backdoor;
  beforeAll(async () => {
    backdoor = await Backdoor.open(inject('databaseUrl'));
  });
  afterAll(() => backdoor.close());

  it('transaction pooling: acquireSessionLock fails with a clear error and leaves nothing locked', async () => {
    const pool = new pg.Pool({ connectionString: urls.transactionUrl, max: 4 });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const name = `bouncer-tx:${Math.random()}`;
        const error = await acquireSessionLock(pool, name).catch((e: unknown) => e);
        expect(AdvisoryLockError.is(error) && error.code).toBe('LOCK_USAGE');
        expect((error as Error).message).toMatch(/transaction-mode pooler/);
        const key = (lockKey(name) as { value: bigint }).value;
        await backdoor.waitFor(
          'the lock to be gone',
          async () => (await backdoor.locksOn(key)).length === 0,
          3_000,
        );
      }
    } finally {
      await pool.end();
    }
  });

  it('session pooling: the session lock works and is released', async () => {
    const pool = new pg.Pool({ connectionString: urls.sessionUrl, max: 4 });
    try {
      const name = `bouncer-session:${Math.random()}`;
      const key = (lockKey(name) as { value: bigint }).value;
      const handle = await acquireSessionLock(pool, name);
      const [holder] = await backdoor.locksOn(key);
      expect(holder).toMatchObject({ pid: handle.pid, granted: true });
      await handle.release();
      expect(await backdoor.locksOn(key)).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
