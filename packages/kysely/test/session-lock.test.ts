import { randomUUID } from 'node:crypto';
import { Backdoor } from '@pglock/test-kit';
import { type Kysely, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  acquireSessionLock,
  InvalidLockOptionsError,
  LockAbortedError,
  LockLostError,
  lockKey,
  tryAcquireSessionLock,
  withSessionLock,
} from '../src/index.ts';
import { serverDialects } from './dialects.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

function name(label: string): { name: string; key: bigint } {
  const name = `kysely-session:${label}:${randomUUID()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
}

describe.each(serverDialects)('session locks over db.connection() ($name)', (dialect) => {
  const opened: Kysely<unknown>[] = [];
  const open = (max?: number) => {
    const db = dialect.open(url, max);
    opened.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((db) => db.destroy()));
  });

  it('holds the lock on one pinned connection until release(); the pool keeps serving', async () => {
    const { name: lockName, key } = name('hold');
    const db = open();
    const other = open();
    const handle = await acquireSessionLock(db, lockName);
    expect(await backdoor.locksOn(key)).toEqual([{ pid: handle.pid, granted: true, mode: 'ExclusiveLock' }]);
    const served = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db);
    expect(served.rows[0]?.pid).not.toBe(handle.pid);
    expect(await tryAcquireSessionLock(other, lockName)).toBeUndefined();
    const release = handle.release();
    expect(handle.release()).toBe(release);
    await release;
    expect(await backdoor.locksOn(key)).toEqual([]);
    const again = await tryAcquireSessionLock(other, lockName);
    expect(again).toBeDefined();
    await again?.release();
  });

  it('a held multi-key shared lock passes many heartbeats without counting as lost', async () => {
    const [first, second] = [name('beat-1'), name('beat-2')];
    const db = open();
    const handle = await acquireSessionLock(db, [first.name, second.name], { shared: true, heartbeatMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(handle.signal.reason).toBeUndefined();
    expect(await backdoor.locksOn(second.key)).toEqual([
      { pid: handle.pid, granted: true, mode: 'ShareLock' },
    ]);
    await handle.release();
    expect(await backdoor.locksOn(first.key)).toEqual([]);
  });

  it('withSessionLock returns the value, passes the error through, and releases either way', async () => {
    const { name: lockName, key } = name('with');
    const db = open();
    const seen = await withSessionLock(db, lockName, async (signal) => {
      expect(signal.aborted).toBe(false);
      return (await backdoor.locksOn(key)).length;
    });
    expect(seen).toBe(1);
    expect(await backdoor.locksOn(key)).toEqual([]);
    const failure = new RangeError('from fn');
    const error = await withSessionLock(db, lockName, async () => Promise.reject(failure)).catch((e) => e);
    expect(error).toBe(failure);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('pg_terminate_backend of the holder aborts the signal with LockLostError; release rejects with it', async () => {
    const { name: lockName, key } = name('terminated');
    const db = open();
    const handle = await acquireSessionLock(db, lockName, { heartbeatMs: 50 });
    const lost = new Promise<unknown>((resolve) =>
      handle.signal.addEventListener('abort', () => resolve(handle.signal.reason), { once: true }),
    );
    await backdoor.query('SELECT pg_terminate_backend($1::int)', [handle.pid]);
    const reason = await lost;
    expect(LockLostError.is(reason)).toBe(true);
    expect((reason as LockLostError).key).toMatchObject({ form: 'bigint', value: key });
    expect(await handle.release().catch((e) => e)).toBe(reason);
    expect(await backdoor.locksOn(key)).toEqual([]);
    // The instance recovers: its pool replaces the dead connection.
    const after = await tryAcquireSessionLock(db, lockName);
    expect(after?.pid).toBeGreaterThan(0);
    await after?.release();
  });

  it('an AbortSignal cancels a waiting acquisition; nothing is left held or waiting', async () => {
    const { name: lockName, key } = name('abort');
    const [holderDb, waiterDb] = [open(), open()];
    const holder = await acquireSessionLock(holderDb, lockName);
    const controller = new AbortController();
    const waiting = acquireSessionLock(waiterDb, lockName, { signal: controller.signal }).catch((e) => e);
    await backdoor.waitForWaiters(key, 1);
    controller.abort(new Error('stop'));
    const error = await waiting;
    expect(LockAbortedError.is(error)).toBe(true);
    expect(await backdoor.locksOn(key)).toEqual([{ pid: holder.pid, granted: true, mode: 'ExclusiveLock' }]);
    await holder.release();
    const next = await tryAcquireSessionLock(waiterDb, lockName);
    expect(next).toBeDefined();
    await next?.release();
  });

  it('rejects a bad heartbeat and a transaction before any SQL', async () => {
    const db = open();
    const badBeat = await acquireSessionLock(db, 'x', { heartbeatMs: 5 }).catch((e) => e);
    expect(InvalidLockOptionsError.is(badBeat)).toBe(true);
    const inTx = await db
      .transaction()
      .execute((trx) => acquireSessionLock(trx, 'x'))
      .catch((e) => e);
    expect(AdvisoryLockError.is(inTx) && inTx.code).toBe('LOCK_USAGE');
  });
});
