import { randomUUID } from 'node:crypto';
import { withLock as pgWithLock } from '@pglock/pg';
import { Backdoor, deferred } from '@pglock/test-kit';
import { CamelCasePlugin, type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  advisoryLocks,
  InvalidLockOptionsError,
  type KyselyTransactionLike,
  LockAbortedError,
  lock,
  lockKey,
  tryLock,
  withLock,
} from '../src/index.ts';
import { serverDialects } from './dialects.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

function name(label: string): { name: string; key: bigint } {
  const name = `kysely:${label}:${randomUUID()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
}

describe.each(serverDialects)('Kysely specifics ($name)', (dialect) => {
  const opened: Kysely<unknown>[] = [];
  const open = () => {
    const db = dialect.open(url);
    opened.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((db) => db.destroy()));
  });

  it('isolationLevel and accessMode reach the transaction Kysely opens', async () => {
    const db = open();
    const settings = await withLock(
      db,
      name('settings').name,
      async (trx) =>
        (
          await sql<{ iso: string; ro: string }>`SELECT current_setting('transaction_isolation') AS iso,
            current_setting('transaction_read_only') AS ro`.execute(trx)
        ).rows[0],
      { isolationLevel: 'serializable', accessMode: 'read only' },
    );
    expect(settings).toEqual({ iso: 'serializable', ro: 'on' });
    const bad = await withLock(db, 'x', async () => 'ran', {
      isolationLevel: 'snapshot' as 'serializable',
    }).catch((e) => e);
    expect(InvalidLockOptionsError.is(bad)).toBe(true);
  });

  it("the user's plugins do not touch pglock's statements (CamelCasePlugin)", async () => {
    const { name: lockName, key } = name('camel');
    const db = open().withPlugin(new CamelCasePlugin());
    const locks = advisoryLocks(db);
    const held = deferred();
    const release = deferred();
    const running = locks.withLock(lockName, async () => {
      held.resolve();
      await release.promise;
    });
    await held.promise;
    try {
      expect(await locks.isLocked(lockName)).toBe(true);
      const rows = (await locks.inspectLocks()).filter((l) => l.key.form === 'bigint' && l.key.value === key);
      expect(rows).toMatchObject([{ granted: true, mode: 'exclusive', ownSession: false }]);
    } finally {
      release.resolve();
      await running;
    }
  });

  it('lock() refuses a non-transaction at run time, and withLock refuses a transaction, before any SQL', async () => {
    const db = open();
    const outside = await lock(db as unknown as KyselyTransactionLike, 'x').catch((e) => e);
    expect(AdvisoryLockError.is(outside) && outside.code).toBe('LOCK_USAGE');
    const nested = await db
      .transaction()
      .execute((trx) => withLock(trx, 'x', async () => 'ran'))
      .catch((e) => e);
    expect(AdvisoryLockError.is(nested) && nested.code).toBe('LOCK_USAGE');
  });

  it("the factory's lock(trx) cancels a wait from another connection; plain lock() refuses signal", async () => {
    const { name: lockName, key } = name('abort-in-trx');
    const [holderDb, waiterDb] = [open(), open()];
    const held = deferred();
    const release = deferred();
    const holding = withLock(holderDb, lockName, async () => {
      held.resolve();
      await release.promise;
    });
    await held.promise;
    const controller = new AbortController();
    const locks = advisoryLocks(waiterDb);
    const waiting = waiterDb
      .transaction()
      .execute((trx) => locks.lock(trx, lockName, { signal: controller.signal }))
      .catch((e) => e);
    await backdoor.waitForWaiters(key, 1);
    controller.abort(new Error('stop'));
    expect(LockAbortedError.is(await waiting)).toBe(true);
    release.resolve();
    await holding;
    const refused = await waiterDb
      .transaction()
      .execute((trx) => tryLock(trx, lockName, { signal: new AbortController().signal, timeoutMs: 100 }))
      .catch((e) => e);
    expect(InvalidLockOptionsError.is(refused)).toBe(true);
  });

  it('the same name through @pglock/kysely and @pglock/pg is one PostgreSQL lock', async () => {
    const { name: lockName, key } = name('interop');
    const db = open();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const held = deferred<number>();
      const release = deferred();
      const holding = withLock(db, lockName, async (trx) => {
        held.resolve((await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0]!.pid);
        await release.promise;
      });
      const pid = await held.promise;
      expect(await backdoor.locksOn(key)).toEqual([{ pid, granted: true, mode: 'ExclusiveLock' }]);
      const fromPg = await pgWithLock(pool, lockName, async () => 'ran', { timeoutMs: 0 }).catch((e) => e);
      expect(AdvisoryLockError.is(fromPg) && fromPg.code).toBe('LOCK_NOT_ACQUIRED');
      release.resolve();
      await holding;
      const pgHeld = deferred();
      const pgRelease = deferred();
      const pgHolding = pgWithLock(pool, lockName, async () => {
        pgHeld.resolve();
        await pgRelease.promise;
      });
      await pgHeld.promise;
      expect(await advisoryLocks(db).tryWithLock(lockName, async () => 'ran')).toEqual({ acquired: false });
      pgRelease.resolve();
      await pgHolding;
    } finally {
      await pool.end();
    }
  });
});
