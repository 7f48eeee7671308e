import { describe, expect, it } from 'vitest';
import {
  createAdvisoryLocks,
  type LockFunctions,
  lockFunctions,
  lockVerbs,
} from '../src/create-advisory-locks.ts';
import { InvalidLockKeyError, InvalidLockOptionsError } from '../src/index.ts';
import type { LockPort, PortConnection } from '../src/lock-port.ts';
import { checkOptionKeys, WITH_LOCK_OPTION_KEYS } from '../src/option-keys.ts';

// No database here: a port that records every call it gets. Bad input must be refused before core
// asks the port for anything (no SQL, no connection, no transaction), and each verb that resolves a
// promise must reject, never throw from the call itself.
function recordingPort(extra: Partial<LockPort<object, unknown>> = {}) {
  const calls: string[] = [];
  const connection: PortConnection = {
    query: async () => {
      calls.push('connection.query');
      return [];
    },
  };
  const port: LockPort<object, unknown> = {
    name: '@acme/recording',
    transactionSettings: ['isolationLevel', 'accessMode'],
    connectionOf: () => undefined,
    transaction: async (_db, _request, body) => {
      calls.push('transaction');
      return body({}, connection);
    },
    query: async () => {
      calls.push('query');
      return [];
    },
    cancellation: () => 'connection',
    pin: async () => {
      calls.push('pin');
      throw new Error('no pins here');
    },
    ...extra,
  };
  return { port, calls };
}

const db = {};
const tx = {};
const job = async () => 'ran';

/** Every verb of `functions` called with `key` and `options` as given, on `db` (a transaction for lock/tryLock). */
function everyVerb(
  functions: LockFunctions<object, unknown>,
  key: unknown,
  options: unknown,
  on: unknown = db,
): [string, () => unknown][] {
  const k = key as never;
  const o = options as never;
  const d = on as never;
  return [
    ['withLock', () => functions.withLock(d, k, job, o)],
    ['tryWithLock', () => functions.tryWithLock(d, k, job, o)],
    ['lock', () => functions.lock(on === db ? tx : d, k, o)],
    ['tryLock', () => functions.tryLock(on === db ? tx : d, k, o)],
    ['isLocked', () => functions.isLocked(d, k, o)],
    ['runOnce', () => functions.runOnce(d, k, options === undefined ? { per: '1h' } : o, job)],
    ['acquireSessionLock', () => functions.acquireSessionLock(d, k, o)],
    ['tryAcquireSessionLock', () => functions.tryAcquireSessionLock(d, k, o)],
    ['withSessionLock', () => functions.withSessionLock(d, k, job, o)],
  ];
}

/** What `run()` did: returned a promise that rejected (and with what), or threw from the call. */
async function settle(
  run: () => unknown,
): Promise<{ threw: unknown } | { rejected: unknown } | { resolved: unknown } | { returned: unknown }> {
  let returned: unknown;
  try {
    returned = run();
  } catch (error) {
    return { threw: error };
  }
  if (!(returned instanceof Promise)) return { returned };
  try {
    return { resolved: await returned };
  } catch (error) {
    return { rejected: error };
  }
}

describe('unknown option keys', () => {
  const locks = () => createAdvisoryLocks(recordingPort().port, db);

  it('a top-level isolationLevel names transaction.isolationLevel', async () => {
    const error = await locks()
      .withLock('k', job, { isolationLevel: 'serializable' } as never)
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^withLock: unknown option `isolationLevel` \(did you mean `transaction\.isolationLevel`\?\)/,
    );
    expect((error as Error).message).toMatch(/timeoutMs, shared, signal, namespace, maxKeys, transaction/);
  });

  it.each([
    ['timeout', '`timeoutMs` or `transaction.timeout`'],
    ['timeoutMS', '`timeoutMs`'],
    ['timeout_ms', '`timeoutMs`'],
    ['timoutMs', '`timeoutMs`'],
    ['lockTimeout', '`timeoutMs`'],
    ['namepsace', '`namespace`'],
    ['accessMode', '`transaction.accessMode`'],
    ['abortSignal', '`signal`'],
    ['exclusive', '`shared`'],
  ])('%s: did you mean %s?', async (key, suggestion) => {
    const error = await locks()
      .withLock('k', job, { [key]: 1 } as never)
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain(`unknown option \`${key}\` (did you mean ${suggestion}?)`);
  });

  it('a name with nothing near gets the list of known keys, and no guess', async () => {
    const error = await locks()
      .runOnce('nightly', { per: '1h', zookeeper: true } as never, job)
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    expect((error as Error).message).toBe(
      'runOnce: unknown option `zookeeper`; the options of runOnce are per, cron, timeZone, timeoutMs, signal, namespace, transaction, minIntervalMs, catchUp, maxRunMs, retry. Pass only those: an unknown key would be ignored, and the call would run without it.',
    );
  });

  it("ShedLock's lockAtMostFor names maxRunMs; a key inside retry is checked there", async () => {
    const foreign = await locks()
      .runOnce('nightly', { per: '1h', lockAtMostFor: '10m' } as never, job)
      .catch((e: unknown) => e);
    expect((foreign as Error).message).toMatch(
      /^runOnce: unknown option `lockAtMostFor` \(did you mean `maxRunMs`\?\)/,
    );
    const inner = await locks()
      .runOnce('nightly', { per: '1h', retry: { limit: 1, delay: 5 } } as never, job)
      .catch((e: unknown) => e);
    expect((inner as Error).message).toMatch(
      /^runOnce: unknown setting `retry\.delay` \(did you mean `retry\.delayMs`\?\); the retry settings runOnce takes here are limit, delayMs\./,
    );
  });

  it('inside transaction: a lock option is named outside it; the list is what the adapter supports', async () => {
    const error = await locks()
      .withLock('k', job, { transaction: { timeoutMs: 5 } } as never)
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /^withLock: unknown setting `transaction\.timeoutMs` \(did you mean `timeoutMs` \(beside `transaction`, not in it\)\?\); the transaction settings withLock takes here are isolationLevel, accessMode\./,
    );
    const typo = await locks()
      .withLock('k', job, { transaction: { isolation: 'serializable' } } as never)
      .catch((e: unknown) => e);
    expect((typo as Error).message).toContain('(did you mean `transaction.isolationLevel`?)');
    // A known setting the adapter cannot apply keeps its own message.
    const unsupported = await locks()
      .withLock('k', job, { transaction: { deferrable: true } })
      .catch((e: unknown) => e);
    expect((unsupported as Error).message).toMatch(
      /transaction\.deferrable is not supported by this adapter/,
    );
  });

  it('every verb refuses an unknown key, before the port is asked for anything', async () => {
    const { port, calls } = recordingPort();
    const functions = lockFunctions<object, unknown>(port);
    for (const [verb, run] of everyVerb(functions, 'k', { bogus: 1 })) {
      const result = await settle(run);
      expect(result, verb).toMatchObject({
        rejected: expect.objectContaining({ code: 'INVALID_LOCK_OPTIONS' }),
      });
      expect(((result as { rejected: Error }).rejected as Error).message, verb).toMatch(
        new RegExp(`^${verb}: unknown option \`bogus\``),
      );
    }
    const leaderError = (() => {
      try {
        functions.leader(db, 'k', { onElected: () => undefined, onElect: () => undefined } as never);
      } catch (error) {
        return error;
      }
    })();
    expect((leaderError as Error).message).toMatch(
      /^leader: unknown option `onElect` \(did you mean `onElected`\?\)/,
    );
    expect(calls).toEqual([]);
  });

  it('lock(tx, …) names where transaction settings go', async () => {
    const error = await locks()
      .lock(tx, 'k', { transaction: { isolationLevel: 'serializable' } } as never)
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(/^lock: transaction settings cannot apply here/);
  });

  it('isLocked takes namespace only', async () => {
    const error = await locks()
      .isLocked('k', { shared: true } as never)
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /^isLocked: unknown option `shared`; the options of isLocked are namespace\./,
    );
  });

  it('factory defaults: unknown keys are refused where the factory is made; an adapter adds its own', () => {
    const { port } = recordingPort();
    expect(() => createAdvisoryLocks(port, db, { isolationLevel: 'serializable' } as never)).toThrow(
      /^advisoryLocks: unknown option `isolationLevel` \(did you mean `transaction\.isolationLevel`\?\)/,
    );
    expect(() =>
      createAdvisoryLocks(port, db, { transaction: { isolation: 'serializable' } } as never),
    ).toThrow(/^advisoryLocks: unknown setting `transaction\.isolation`/);
    expect(() => createAdvisoryLocks(port, db, { control: {} } as never)).toThrow(/unknown option `control`/);
    const withControl = recordingPort({ factoryOptions: ['control'] }).port;
    expect(() => createAdvisoryLocks(withControl, db, { control: {} } as never)).not.toThrow();
    // heartbeatMs is a default only where there are session locks.
    const noSessions = recordingPort({ pin: undefined }).port;
    expect(() => createAdvisoryLocks(noSessions, db, { heartbeatMs: 500 })).toThrow(
      /unknown option `heartbeatMs`/,
    );
    expect(() => createAdvisoryLocks(port, db, { heartbeatMs: 500 })).not.toThrow();
    // So is the session connection mode, and only its two values.
    expect(() => createAdvisoryLocks(noSessions, db, { connection: 'dedicated' })).toThrow(
      /unknown option `connection`/,
    );
    expect(() => createAdvisoryLocks(port, db, { connection: 'dedicated' })).not.toThrow();
    expect(() => createAdvisoryLocks(port, db, { connection: 'pooled' } as never)).toThrow(
      "advisoryLocks: connection must be 'shared' or 'dedicated' (got 'pooled').",
    );
    expect(() => lockVerbs(port, { timeoutMS: 5 } as never)).toThrow(/did you mean `timeoutMs`\?/);
  });

  it('known keys given as undefined, inherited and symbol keys pass', async () => {
    const { port, calls } = recordingPort();
    const functions = lockFunctions<object, unknown>(port);
    const inherited = Object.create({ bogus: 1 }) as object;
    expect(() => checkOptionKeys(inherited, WITH_LOCK_OPTION_KEYS, 'withLock')).not.toThrow();
    expect(() => checkOptionKeys({ [Symbol('x')]: 1 }, WITH_LOCK_OPTION_KEYS, 'withLock')).not.toThrow();
    expect(await functions.withLock(db, 'k', job, { timeoutMs: undefined, transaction: undefined })).toBe(
      'ran',
    );
    expect(calls[0]).toBe('transaction');
  });
});

describe('a verb that resolves a promise never throws from the call', () => {
  const cases: [string, unknown, unknown, unknown][] = [
    ['an empty name', '', undefined, db],
    ['a float key', 1.5, undefined, db],
    ['an empty key array', [], undefined, db],
    ['options: null', 'k', null, db],
    ['options: a string', 'k', 'fast', db],
    ['timeoutMs: -1', 'k', { timeoutMs: -1 }, db],
    ['an unknown key', 'k', { isolationLevel: 'serializable' }, db],
    ['a null database', 'k', undefined, null],
    ['a string for a database', 'k', undefined, 'postgres://'],
  ];

  it.each(cases)(
    '%s: every verb rejects with the typed error, and nothing reaches the port',
    async (_label, key, options, on) => {
      const { port, calls } = recordingPort();
      const functions = lockFunctions<object, unknown>(port);
      for (const [verb, run] of everyVerb(functions, key, options, on)) {
        // runOnce names jobs with strings: a number is refused as a key too.
        const result = await settle(run);
        expect(Object.keys(result), `${verb}: ${String(Object.values(result)[0])}`).toEqual(['rejected']);
        const error = (result as { rejected: unknown }).rejected;
        expect(
          InvalidLockKeyError.is(error) || InvalidLockOptionsError.is(error),
          `${verb}: ${String(error)}`,
        ).toBe(true);
        // Options and handles are named with the function called (a key's own message says what is wrong with it).
        if (InvalidLockOptionsError.is(error))
          expect((error as Error).message, verb).toMatch(new RegExp(`^${verb}: `));
      }
      expect(calls).toEqual([]);
    },
  );

  it('inspectLocks on a bad handle rejects; leader (no promise) throws the typed error', async () => {
    const functions = lockFunctions<object, unknown>(recordingPort().port);
    expect(await settle(() => functions.inspectLocks(null as never))).toMatchObject({
      rejected: expect.objectContaining({ code: 'INVALID_LOCK_OPTIONS' }),
    });
    expect(() => functions.leader(null as never, 'k', { onElected: () => undefined })).toThrow(
      expect.objectContaining({ code: 'INVALID_LOCK_OPTIONS', message: expect.stringMatching(/^leader: /) }),
    );
    expect(() => functions.leader(db, '', { onElected: () => undefined })).toThrow(InvalidLockKeyError);
  });

  it('isLocked with a bad key rejects (it threw from the call before)', async () => {
    const { port, calls } = recordingPort();
    const locks = createAdvisoryLocks(port, db);
    const returned = (() => {
      try {
        return locks.isLocked('');
      } catch (error) {
        return error;
      }
    })();
    expect(returned).toBeInstanceOf(Promise);
    await expect(returned).rejects.toSatisfy(InvalidLockKeyError.is);
    expect(calls).toEqual([]);
  });
});
