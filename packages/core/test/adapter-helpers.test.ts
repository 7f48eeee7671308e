import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
// The `databaseUrl` the vitest global setup provides (declared in the test-kit, shared by all packages).
import type {} from '../../test-kit/src/provided-context.ts';
import { createAdvisoryLocks } from '../src/create-advisory-locks.ts';
import {
  nodePostgresTransaction,
  openNodePostgresClient,
  pinNodePostgresClient,
  queryNodePostgres,
} from '../src/drivers/node-postgres.ts';
import { refusedCommitError } from '../src/drivers/postgres-js.ts';
import { InvalidLockOptionsError, TransactionRolledBackError } from '../src/index.ts';
import type { LockPort } from '../src/lock-port.ts';
import { statement } from '../src/statement.ts';
import { checkTransactionSettings } from '../src/transaction-settings.ts';

const NO_SETTINGS = checkTransactionSettings(undefined, [], 'withLock');

// The helpers every node-postgres adapter shares run here on a real pool; the conformance kit runs
// them again through @pglock/pg, Drizzle's node-postgres driver and Prisma's adapter-pg.
const url = inject('databaseUrl');
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: url, max: 2 });
});
afterAll(() => pool.end());

describe('node-postgres helpers', () => {
  it('a COMMIT answered with ROLLBACK is TransactionRolledBackError, and the client goes back clean', async () => {
    const error = await nodePostgresTransaction(pool, NO_SETTINGS, async (client) => {
      await client.query('SELECT 1/0').catch(() => undefined);
    }).catch((e: unknown) => e);
    expect(TransactionRolledBackError.is(error)).toBe(true);
    expect(pool.idleCount).toBeGreaterThan(0);
    const [row] = await queryNodePostgres(pool, statement('SELECT $1::text AS v', ['ok']));
    expect(row).toEqual({ v: 'ok' });
  });

  it('a pinned client is destroyed unless released clean; an own client closes on its own', async () => {
    const deaths: unknown[] = [];
    const pinned = await pinNodePostgresClient(pool, (cause) => deaths.push(cause));
    expect(pinned.processID).toBeGreaterThan(0);
    const before = pool.totalCount;
    await pinned.release('unknown', new Error('state unknown'));
    expect(pool.totalCount).toBe(before - 1);
    const own = await openNodePostgresClient(pool);
    expect(await queryNodePostgres(own.client, statement('SELECT 1 AS one'))).toEqual([{ one: 1 }]);
    await own.end();
    await own.end(); // never rejects, also when already ended
    expect(deaths).toEqual([]);
  });
});

describe('adapter helpers', () => {
  it('names: messages name the function the user called', async () => {
    const port = { name: '@acme/x', transactionSettings: [] } as unknown as LockPort<object, unknown>;
    const locks = createAdvisoryLocks(port, {}, {}, { withLock: '$withLock' });
    const error = await locks.withLock('k', 'not a function' as never).catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    expect((error as Error).message).toBe('$withLock: the callback must be a function.');
  });

  it('refusedCommitError: 25P02 always; other SQL errors only where the driver rethrows them', () => {
    const failed = Object.assign(new Error('aborted'), { code: '25P02' });
    const statementError = Object.assign(new Error('division by zero'), { code: '22012' });
    expect(refusedCommitError(failed, false, 'withLock')?.message).toMatch(
      /^withLock: the callback resolved/,
    );
    expect(refusedCommitError(statementError, false, 'withLock')).toBeUndefined();
    expect(TransactionRolledBackError.is(refusedCommitError(statementError, true, 'withLock'))).toBe(true);
    expect(refusedCommitError(new Error('socket closed'), true, 'withLock')).toBeUndefined();
  });
});
