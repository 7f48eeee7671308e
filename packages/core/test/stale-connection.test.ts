import { describe, expect, it } from 'vitest';
import { LockQueryError, LockUsageError } from '../src/errors.ts';
import { lockKey } from '../src/lock-key.ts';
import { pinFailed, STALE_PAUSE_MS, staleConnection, staleRetryPause } from '../src/stale-connection.ts';

/** An error as a driver makes it: a message and extra fields. */
const driverError = (fields: object, message = 'failed') => Object.assign(new Error(message), fields);
const request = { keys: [lockKey(42n)] };

describe('staleConnection: the pool handed out a dead connection', () => {
  it('a closed socket or the server ending the session, raw or under a LockQueryError', () => {
    expect(staleConnection(driverError({ code: 'ECONNRESET', errno: -104 }, 'read ECONNRESET'))).toBe(true);
    expect(staleConnection(driverError({ code: 'CONNECTION_CLOSED' }, 'write CONNECTION_CLOSED'))).toBe(true);
    expect(staleConnection(driverError({ code: '57P01' }, 'terminating connection'))).toBe(true);
    expect(
      staleConnection(new LockQueryError('checking failed', { cause: driverError({ code: '08006' }) })),
    ).toBe(true);
  });

  it('not a statement the server refused, nor a refusal of pglock’s own', () => {
    expect(staleConnection(driverError({ code: '42501' }, 'permission denied'))).toBe(false);
    expect(
      staleConnection(new LockQueryError('checking failed', { cause: driverError({ code: '57014' }) })),
    ).toBe(false);
    expect(staleConnection(new LockUsageError('through a transaction-mode pooler'))).toBe(false);
    expect(staleConnection(new LockQueryError('wrapped', { cause: new LockUsageError('refused') }))).toBe(
      false,
    );
  });
});

describe('pinFailed', () => {
  it('a driver error becomes a LockQueryError that names the call and keeps the cause', () => {
    const cause = driverError({ code: 'ECONNREFUSED' }, 'connect ECONNREFUSED 127.0.0.1:1');
    const error = pinFailed(request, 'acquireSessionLock', cause);
    expect(LockQueryError.is(error)).toBe(true);
    expect((error as LockQueryError).message).toMatch(
      /^acquireSessionLock: taking a connection for the lock .* failed in the database: connect ECONNREFUSED/,
    );
    expect((error as LockQueryError).cause).toBe(cause);
  });

  it('pglock’s own errors go through as they are', () => {
    const refused = new LockUsageError('refused');
    expect(pinFailed(request, 'acquireSessionLock', refused)).toBe(refused);
  });
});

describe('staleRetryPause', () => {
  it('waits about STALE_PAUSE_MS, less when the budget ends sooner, at once when it has ended', async () => {
    const timed = async (deadline: number | undefined) => {
      const start = performance.now();
      await staleRetryPause(deadline);
      return performance.now() - start;
    };
    expect(await timed(undefined)).toBeGreaterThanOrEqual(STALE_PAUSE_MS - 5);
    // Upper bounds are loose: only that the budget, not the pause, decided.
    const capped = await timed(performance.now() + 20);
    expect(capped).toBeGreaterThanOrEqual(15);
    expect(capped).toBeLessThan(STALE_PAUSE_MS + 400);
    expect(await timed(performance.now() - 1_000)).toBeLessThan(STALE_PAUSE_MS + 400);
  });
});
