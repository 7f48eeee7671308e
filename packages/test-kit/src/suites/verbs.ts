import * as core from '@pglock/core';
import { AdvisoryLockError, InvalidLockKeyError, InvalidLockOptionsError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { missing, type SuiteContext, settlesWithin, skipped } from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

const coreExports = new Set(Object.keys(core));
type Fn = (...args: unknown[]) => unknown;

/** How the suite calls one verb. `f` takes the handle first (for a bound method the suite drops it). */
interface VerbShape {
  /** `f(handle, key, options)` and the like, with a callback where the verb takes one. */
  readonly call: (f: Fn, handle: unknown, key: unknown, options: unknown) => unknown;
  /** The handle is a transaction (`lock(tx, …)`), not the database. */
  readonly inTransaction?: boolean;
  /** It resolves no promise (`leader` returns its campaign): bad input throws from the call, typed. */
  readonly sync?: boolean;
  /** It takes no key (a bad key is not a case for it). */
  readonly keyless?: boolean;
  /** The option names it takes (none: it takes no options). */
  readonly keys: readonly string[];
  /** It takes `transaction: { … }` settings. */
  readonly transaction?: boolean;
  /** What valid options of it hold besides the case's (`runOnce` needs `per`). */
  readonly base?: Readonly<Record<string, unknown>>;
}

// The options each verb takes, as the documentation gives them: the contract, written here apart from
// core's own lists so that the kit checks them rather than repeat them.
const LOCK_OPTION_KEYS = ['timeoutMs', 'shared', 'signal', 'namespace', 'maxKeys'];
const WITH_LOCK_OPTION_KEYS = [...LOCK_OPTION_KEYS, 'transaction'];
const SESSION_LOCK_OPTION_KEYS = [...LOCK_OPTION_KEYS, 'heartbeatMs', 'connection'];
const IS_LOCKED_OPTION_KEYS = ['namespace'];
const RUN_ONCE_OPTION_KEYS = ['per', 'timeoutMs', 'signal', 'namespace', 'transaction'];
const LEADER_OPTION_KEYS = ['onElected', 'onError', 'heartbeatMs', 'namespace', 'retryMs', 'identity'];
const CURRENT_LEADER_OPTION_KEYS = ['namespace'];
const OBSERVE_LEADER_OPTION_KEYS = ['onChange', 'onError', 'pollMs', 'namespace', 'signal'];

const job = async () => 'ran';
const keyed = (keys: readonly string[]): VerbShape => ({ call: (f, on, key, o) => f(on, key, o), keys });
const withCallback: VerbShape = {
  call: (f, on, key, o) => f(on, key, job, o),
  keys: WITH_LOCK_OPTION_KEYS,
  transaction: true,
};

/**
 * Every verb an adapter may export, by name (a client method `$withLock` has the shape of `withLock`).
 * A new export that resolves a promise must be added here: the suite fails on one it cannot call.
 */
const SHAPES: Readonly<Record<string, VerbShape>> = {
  withLock: withCallback,
  tryWithLock: withCallback,
  lock: { ...keyed(LOCK_OPTION_KEYS), inTransaction: true },
  tryLock: { ...keyed(LOCK_OPTION_KEYS), inTransaction: true },
  isLocked: keyed(IS_LOCKED_OPTION_KEYS),
  inspectLocks: { call: (f, on) => f(on), keyless: true, keys: [] },
  runOnce: {
    call: (f, on, key, o) => f(on, key, o, job),
    keys: RUN_ONCE_OPTION_KEYS,
    transaction: true,
    base: { per: '1h' },
  },
  acquireSessionLock: keyed(SESSION_LOCK_OPTION_KEYS),
  tryAcquireSessionLock: keyed(SESSION_LOCK_OPTION_KEYS),
  withSessionLock: { call: (f, on, key, o) => f(on, key, job, o), keys: SESSION_LOCK_OPTION_KEYS },
  leader: { ...keyed(LEADER_OPTION_KEYS), sync: true, base: { onElected: () => undefined } },
  currentLeader: keyed(CURRENT_LEADER_OPTION_KEYS),
  observeLeader: { ...keyed(OBSERVE_LEADER_OPTION_KEYS), sync: true, base: { onChange: () => undefined } },
  migrateWithLock: {
    call: (f, on, _key, o) => f(on, o),
    keyless: true,
    keys: ['migrationsFolder', 'migrationsTable', 'migrationsSchema', 'timeoutMs', 'signal'],
    base: { migrationsFolder: './drizzle' },
  },
};

/** A typo of the verb's first option that is not required: its last two letters swapped. */
function typoOf(shape: VerbShape): { typed: string; meant: string } {
  const meant = shape.keys.find((key) => shape.base?.[key] === undefined) ?? '';
  return { typed: `${meant.slice(0, -2)}${meant.slice(-1)}${meant.slice(-2, -1)}`, meant };
}

/** One way to reach a verb: a function of the package, a method of its factory, a method on the client. */
interface Reach {
  readonly label: string;
  readonly name: string;
  readonly shape: VerbShape;
  /** It is given a handle: a function of the package, or a factory's `lock(tx, …)`; a bound method is not. */
  readonly takesHandle: boolean;
  /** Its handle is a transaction. */
  readonly inTransaction: boolean;
  /** Calls it on `handle` (a bound method ignores it). */
  invoke(handle: unknown, key: unknown, options: unknown): unknown;
}

/** A case of bad input: what is passed, and the error it must be. */
interface Case {
  readonly label: string;
  /** `undefined`: the verb's valid key (its unique name). */
  readonly key?: (name: string) => unknown;
  /** `undefined`: no options (the verb's `base` when it needs some). */
  readonly options?: (shape: VerbShape) => unknown;
  /** The handle: `'db'` (default), or a bad one. */
  readonly handle?: 'db' | 'null';
  readonly applies: (shape: VerbShape, reach: Reach) => boolean;
  readonly is: (error: unknown) => boolean;
  /** What the message must say. */
  readonly message?: (shape: VerbShape) => RegExp;
}

const withBase = (shape: VerbShape, options: Record<string, unknown>) => ({ ...shape.base, ...options });

const takesKey = (s: VerbShape) => !s.keyless;
const takesOptions = (s: VerbShape) => s.keys.length > 0;
const escaped = (text: string) => text.replace(/[$.*+?()[\]{}|^\\]/g, '\\$&');

const CASES: readonly Case[] = [
  { label: "an empty name ''", key: () => '', applies: takesKey, is: InvalidLockKeyError.is },
  {
    label: 'an empty name beside a valid one',
    key: (name) => [name, ''],
    applies: takesKey,
    is: InvalidLockKeyError.is,
  },
  {
    label: 'a float beside a valid name',
    key: (name) => [name, 1.5],
    applies: takesKey,
    is: InvalidLockKeyError.is,
  },
  { label: 'options: null', options: () => null, applies: takesOptions, is: InvalidLockOptionsError.is },
  {
    label: 'timeoutMs: -1',
    options: (s) => withBase(s, { timeoutMs: -1 }),
    applies: takesOptions,
    is: InvalidLockOptionsError.is,
    message: () => /timeoutMs/,
  },
  {
    label: 'an unknown option (isolationLevel beside transaction)',
    options: (s) => withBase(s, { isolationLevel: 'serializable' }),
    applies: takesOptions,
    is: InvalidLockOptionsError.is,
    message: (s) =>
      s.transaction
        ? /unknown option `isolationLevel` \(did you mean `transaction\.isolationLevel`\?\)/
        : /unknown option `isolationLevel`/,
  },
  {
    label: 'a misspelt option',
    options: (s) => withBase(s, { [typoOf(s).typed]: 100 }),
    applies: takesOptions,
    is: InvalidLockOptionsError.is,
    message: (s) =>
      new RegExp(
        `unknown option \`${escaped(typoOf(s).typed)}\` \\(did you mean \`${escaped(typoOf(s).meant)}\`\\?\\)`,
      ),
  },
  {
    label: 'an unknown transaction setting',
    options: (s) => withBase(s, { transaction: { isolation: 'serializable' } }),
    applies: (s) => s.transaction === true,
    is: InvalidLockOptionsError.is,
    message: () =>
      /unknown setting `transaction\.isolation` \(did you mean `transaction\.isolationLevel`\?\)/,
  },
  {
    label: 'a null handle',
    handle: 'null',
    applies: (_s, reach) => reach.takesHandle,
    is: (e) => AdvisoryLockError.is(e) && (e.code === 'INVALID_LOCK_OPTIONS' || e.code === 'LOCK_USAGE'),
  },
];

/** Every verb of `instance`: the package's functions, its factory's methods, the client's methods. */
function reachesOf(
  instance: AdapterInstance,
  exports: Readonly<Record<string, unknown>>,
  clientMethods: readonly string[],
): { reaches: Reach[]; unknown: string[] } {
  const reaches: Reach[] = [];
  const unknown: string[] = [];
  const add = (
    label: string,
    name: string,
    where: 'package' | 'factory' | 'client',
    run: (shape: VerbShape) => Reach['invoke'],
  ) => {
    const shape = SHAPES[name.replace(/^\$/, '')];
    if (shape === undefined) {
      unknown.push(label);
      return;
    }
    const inTransaction = where !== 'client' && shape.inTransaction === true;
    const takesHandle = where === 'package' || inTransaction;
    reaches.push({ label, name, shape, takesHandle, inTransaction, invoke: run(shape) });
  };
  for (const [name, value] of Object.entries(exports)) {
    // The factory resolves no promise; its bad defaults are checked below.
    if (typeof value !== 'function' || coreExports.has(name) || name === 'advisoryLocks') continue;
    add(
      name,
      name,
      'package',
      (shape) => (handle, key, options) => shape.call(value as Fn, handle, key, options),
    );
  }
  const locks = instance.locks as unknown as Record<string, unknown>;
  for (const [name, value] of Object.entries(locks)) {
    if (typeof value !== 'function') continue;
    const method = (...args: unknown[]) => (value as Fn).apply(locks, args);
    add(
      `advisoryLocks(db).${name}`,
      name,
      'factory',
      (shape) => (handle, key, options) =>
        shape.call(shape.inTransaction ? method : (_on, ...rest) => method(...rest), handle, key, options),
    );
  }
  const client = (instance.db ?? {}) as Record<string, unknown>;
  for (const name of clientMethods) {
    const method = (...args: unknown[]) => (client[name] as Fn).apply(client, args);
    // A client method is bound to its client: `$lock` is called on it too (awaited alone, it rejects).
    add(
      `db.${name}`,
      name,
      'client',
      (shape) => (handle, key, options) =>
        shape.call((_on, ...rest) => method(...rest), handle, key, options),
    );
  }
  return { reaches, unknown };
}

/**
 * Issue 23 item 12 (and 6): every verb of the package (its functions, its factory's methods, the
 * client's methods) given a bad key, bad options, an unknown option or a bad handle returns a
 * promise that rejects with the typed error — never a throw from the call, which `verb(…).catch(…)`
 * cannot catch — before any SQL, and nothing stays locked. `leader` and `advisoryLocks`, which resolve
 * no promise, throw the typed error from the call.
 */
export function verbsSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const pkg = ctx.harness.package;
  const noPackage = pkg === undefined ? 'the harness names no package (AdapterHarness.package)' : undefined;
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its locks',
  );

  describe.skipIf(noPackage)(`verbs${skipped(noPackage)}`, () => {
    if (pkg === undefined) return;

    it('the kit knows how to call every verb the package exports', async () => {
      const instance = await ctx.open();
      const { reaches, unknown } = reachesOf(instance, pkg.exports, pkg.clientMethods ?? []);
      expect(unknown, 'exports the verbs suite cannot call: add their shape to SHAPES').toEqual([]);
      expect(reaches.length).toBeGreaterThan(0);
    });

    for (const badCase of CASES) {
      it(`${badCase.label}: every verb rejects with the typed error (never throws from the call), before any SQL${noBackdoor ? '' : ', nothing locked'}`, async () => {
        const instance = await ctx.open();
        const { reaches } = reachesOf(instance, pkg.exports, pkg.clientMethods ?? []);
        // Warm the pool, so that a statement a call sent is not hidden by one the harness sends first.
        await instance.isLocked(ctx.name('warm').name);
        const failures: string[] = [];
        const checked: string[] = [];
        for (const reach of reaches) {
          const { shape } = reach;
          if (!badCase.applies(shape, reach)) continue;
          const { name, key: lockKey } = ctx.name(`verbs-${reach.name}`);
          const key = badCase.key?.(name) ?? name;
          const options = badCase.options !== undefined ? badCase.options(shape) : shape.base;
          const message = badCase.message?.(shape);
          const refused = (error: unknown): string | undefined => {
            if (!badCase.is(error)) return `refused with ${String(error)}, not the typed error`;
            if (message !== undefined && !message.test((error as Error).message))
              return `message ${JSON.stringify((error as Error).message)} does not match ${message}`;
            return undefined;
          };
          const attempt = async (handle: unknown): Promise<string | undefined> => {
            const before = instance.statementCount();
            let returned: unknown;
            let result: string | undefined;
            try {
              returned = reach.invoke(badCase.handle === 'null' ? null : handle, key, options);
            } catch (error) {
              result = shape.sync
                ? refused(error)
                : `threw from the call instead of rejecting: ${String(error)}`;
            }
            if (result === undefined && returned !== undefined && shape.sync) {
              await (returned as { stop?: () => Promise<void> }).stop?.();
              result = 'accepted the bad input';
            } else if (result === undefined && !shape.sync) {
              if (typeof (returned as PromiseLike<unknown> | undefined)?.then !== 'function') {
                result = `returned ${String(returned)}, not a promise`;
              } else {
                const settled = await settlesWithin(
                  Promise.resolve(returned).then(
                    (value: unknown) => ({ resolved: true as const, value }),
                    (error: unknown) => ({ resolved: false as const, error }),
                  ),
                  5_000,
                  reach.label,
                );
                if (settled.resolved) {
                  result = 'resolved';
                  // A session lock taken with the bad input holds a pooled connection: give it back.
                  await (settled.value as { release?: () => Promise<void> } | undefined)
                    ?.release?.()
                    .catch(() => undefined);
                } else result = refused(settled.error);
              }
            }
            if (result === undefined && capabilities.countsStatements && instance.statementCount() !== before)
              result = `sent ${instance.statementCount() - before} statement(s)`;
            // Inside the transaction for lock(tx, …): its end would release what a call took.
            if (
              result === undefined &&
              noBackdoor === undefined &&
              (await ctx.backdoor.locksOn(lockKey)).length > 0
            )
              result = `left ${name} locked`;
            return result;
          };
          const failure =
            reach.inTransaction && badCase.handle !== 'null'
              ? await instance.transaction((tx) => attempt(tx.handle))
              : await attempt(instance.db);
          if (failure !== undefined) failures.push(`${reach.label}: ${failure}`);
          checked.push(reach.label);
        }
        expect(failures).toEqual([]);
        expect(checked.length).toBeGreaterThan(0);
      });
    }

    it('advisoryLocks with bad defaults throws the typed error from the call (it resolves no promise), before any SQL', async () => {
      const instance = await ctx.open();
      await instance.isLocked(ctx.name('warm').name);
      const before = instance.statementCount();
      for (const [defaults, message] of [
        [null, /defaults must be an object/],
        [{ timeoutMs: -1 }, /timeoutMs/],
        [
          { isolationLevel: 'serializable' },
          /unknown option `isolationLevel` \(did you mean `transaction\.isolationLevel`\?\)/,
        ],
        [{ namespce: 'billing' }, /unknown option `namespce` \(did you mean `namespace`\?\)/],
        [{ transaction: { isolation: 'serializable' } }, /unknown setting `transaction\.isolation`/],
      ] as const) {
        let thrown: unknown;
        try {
          instance.advisoryLocks(defaults as never);
        } catch (error) {
          thrown = error;
        }
        expect(InvalidLockOptionsError.is(thrown), `${JSON.stringify(defaults)}: ${String(thrown)}`).toBe(
          true,
        );
        expect((thrown as Error).message).toMatch(message);
      }
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });
  });
}
