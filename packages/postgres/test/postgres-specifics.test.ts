import { deferred, useLockTestFixtures } from '@pglock/test-kit';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import {
  acquireSessionLock,
  advisoryLocks,
  LockNotAcquiredError,
  LockUsageError,
  TransactionRolledBackError,
  withLock,
} from '../src/index.ts';

const t = useLockTestFixtures('postgres');

describe('postgres.js specifics', () => {
  const opened: postgres.Sql[] = [];
  const open = (options: postgres.Options<Record<string, never>> = {}) => {
    const sql = postgres(t.url, { max: 2, onnotice: () => undefined, ...options });
    opened.push(sql);
    return sql;
  };
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((sql) => sql.end({ timeout: 5 })));
  });

  it('a reserved connection is refused before any SQL: it opens no transaction of its own', async () => {
    const reserved = await open().reserve();
    try {
      const error = await withLock(reserved as never, t.unique('reserved').name, async () => 1).catch(
        (e: unknown) => e,
      );
      expect(LockUsageError.is(error)).toBe(true);
      expect((error as Error).message).toMatch(/reserved connection/);
    } finally {
      reserved.release();
    }
  });

  it('a caught failure dooms the whole sql.begin: withLock says so, and tx.savepoint keeps the outer work', async () => {
    const sql = open();
    const swallowed = await withLock(sql, t.unique('swallow').name, async (tx) => {
      await tx`SELECT pglock_no_such_function()`.catch(() => undefined);
      return 'returned';
    }).catch((e: unknown) => e);
    expect(TransactionRolledBackError.is(swallowed)).toBe(true);

    // A nested bounded wait that elapses, in a savepoint of postgres.js's own: the outer commits.
    const inner = t.unique('inner');
    const held = deferred();
    const done = deferred();
    const holder = withLock(open(), inner.name, async () => {
      held.resolve();
      await done.promise;
    });
    await held.promise;
    const outer = await withLock(sql, t.unique('outer').name, async (tx) => {
      const nested = await tx
        .savepoint((sp) => withLock(sp, inner.name, async () => 'ran', { timeoutMs: 50 }))
        .catch((e: unknown) => e);
      expect(LockNotAcquiredError.is(nested)).toBe(true);
      const [row] = await tx`SELECT 'committed' AS outcome`;
      return row?.outcome;
    });
    expect(outer).toBe('committed');
    done.resolve();
    await holder;
  });

  it('a session lock opens a connection of its own: it works on a pool of one, beside a transaction', async () => {
    const sql = open({ max: 1 });
    const { name, key } = t.unique('session');
    await using lock = await acquireSessionLock(sql, name);
    expect(await t.backdoor.locksOn(key)).toEqual([{ pid: lock.pid, granted: true, mode: 'ExclusiveLock' }]);
    const pid = await advisoryLocks(sql).withLock(t.unique('beside').name, async (tx) => {
      const [row] = await tx`SELECT pg_backend_pid() AS pid`;
      return row?.pid;
    });
    expect(pid).not.toBe(lock.pid);
  });
});
