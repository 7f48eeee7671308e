import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
// The `databaseUrl` the vitest global setup provides (declared in the test-kit, shared by all packages).
import type {} from '../../test-kit/src/provided-context.ts';
import {
  AdvisoryLockError,
  LockAbortedError,
  LockNotAcquiredError,
  LockTableMissingError,
  lockKey,
  ScheduleMismatchError,
} from '../src/index.ts';
import { SqlState, sqlStateOf } from '../src/sql-state.ts';

describe('errors', () => {
  it('is() recognises errors from another copy of the package, where instanceof fails', async () => {
    // A query string makes Vite load a second, separate instance of the module: two copies of the class.
    const secondCopy = '../src/errors.ts?second-copy';
    const copy = (await import(/* @vite-ignore */ secondCopy)) as typeof import('../src/errors.ts');
    expect(copy.AdvisoryLockError).not.toBe(AdvisoryLockError);
    const foreign = new copy.LockNotAcquiredError('busy', { timeoutMs: 0, keys: [lockKey('x')] });
    expect(foreign instanceof AdvisoryLockError).toBe(false);
    expect(AdvisoryLockError.is(foreign)).toBe(true);
    expect(LockNotAcquiredError.is(foreign)).toBe(true);
    expect(LockAbortedError.is(foreign)).toBe(false);
    expect(AdvisoryLockError.is(new Error('plain'))).toBe(false);
  });

  it('carries name, code, keys and cause', () => {
    const cause = new Error('driver');
    const error = new LockAbortedError('aborted', { keys: [lockKey('k')], reason: 'stop', cause });
    expect(error.name).toBe('LockAbortedError');
    expect(error.code).toBe('LOCK_ABORTED');
    expect(error.key).toMatchObject({ name: 'k' });
    expect(error.cause).toBe(cause);
    expect(error.reason).toBe('stop');
  });

  it('ScheduleMismatchError carries both schedules, and is() knows it from another copy', async () => {
    const otherCopy = '../src/job-errors.ts?schedule-copy';
    const copy = (await import(/* @vite-ignore */ otherCopy)) as typeof import('../src/job-errors.ts');
    const foreign = new copy.ScheduleMismatchError('per', {
      keys: [lockKey('job')],
      schedule: { kind: 'per', perMs: 1_000 },
      storedSchedule: { kind: 'per', perMs: 60_000 },
    });
    expect(ScheduleMismatchError.is(foreign)).toBe(true);
    expect(LockTableMissingError.is(foreign)).toBe(false);
    expect(foreign).toMatchObject({
      name: 'ScheduleMismatchError',
      code: 'SCHEDULE_MISMATCH',
      perMs: 1_000,
      storedPerMs: 60_000,
    });
    expect(foreign.key).toMatchObject({ name: 'job' });
    const cron = new ScheduleMismatchError('cron', {
      keys: [lockKey('job')],
      schedule: { kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' },
      storedSchedule: { kind: 'per', perMs: 60_000 },
    });
    expect(cron).toMatchObject({ perMs: undefined, storedPerMs: 60_000 });
    expect(cron.schedule).toEqual({ kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' });
  });

  // `pnpm test:unit` runs without a server (PGLOCK_NO_DATABASE=1); sql-state.test.ts covers the shapes.
  it.skipIf(process.env.PGLOCK_NO_DATABASE === '1')(
    'sqlStateOf finds the SQLSTATE of a real node-postgres error, also when wrapped',
    async () => {
      const client = new pg.Client(inject('databaseUrl'));
      await client.connect();
      try {
        const error = await client.query('SELECT 1 / 0').catch((e: unknown) => e);
        expect(sqlStateOf(error)).toBe('22012');
        expect(sqlStateOf({ cause: { cause: error } })).toBe('22012');
        expect(sqlStateOf({ meta: { code: SqlState.deadlockDetected } })).toBe('40P01');
        expect(sqlStateOf({ code: 'P2010' })).toBeUndefined();
        // Prisma 7 with a driver adapter: the SQLSTATE sits in meta.driverAdapterError.cause.originalCode.
        const prismaShaped = {
          code: 'P2010',
          meta: {
            driverAdapterError: { cause: { originalCode: '40P01', kind: 'TransactionWriteConflict' } },
          },
        };
        expect(sqlStateOf(prismaShaped)).toBe('40P01');
      } finally {
        await client.end();
      }
    },
  );
});
