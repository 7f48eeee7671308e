import { AsyncLocalStorage } from 'node:async_hooks';
import { LockUsageError } from './errors.ts';
import { compareLockKeys, type LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import type { PortConnection } from './lock-port.ts';
import { describeKeys } from './messages.ts';

/** The keys a running `withSessionLock` callback's session holds, and in which mode. */
export interface SessionHold {
  readonly keys: readonly LockKey[];
  readonly shared: boolean;
}

/**
 * A transaction pglock opened (or nested into) that is running its callback. A lock call made inside
 * the callback, on the same database, takes its lock on this connection, with a savepoint: the same
 * key is re-entrant, never waiting on itself, and a wait for another key is on a connection that
 * holds locks, so PostgreSQL's deadlock detector sees a cycle through two such callbacks.
 */
export interface LockContext {
  /** The handle the outer call was given (a pool, a database, a client). */
  readonly root: object;
  /** What the callback received (the transaction). */
  readonly tx: unknown;
  readonly connection: PortConnection;
  /** 1 for pglock's own transaction, +1 per nested savepoint. */
  readonly depth: number;
  /**
   * The enclosing context: the outer savepoint's, or for pglock's own transaction the one its call
   * was made in (another database's callback, a session lock's), so lookups see every level.
   */
  readonly parent: LockContext | undefined;
  /**
   * The nested call running directly in this context's transaction, from its start until its
   * savepoint is released or rolled back: a second one at once would interleave savepoints, and the
   * callback must not settle (and its transaction end) under it.
   */
  nested: NestedCall | undefined;
  /**
   * False once the callback has settled. Work the callback started and left running (a timer, an
   * un-awaited promise) still carries the context: a lock call from there must not nest into a
   * transaction that has ended, whose connection may be serving another caller by then.
   */
  open: boolean;
  /**
   * How often this context's own code ran while it had a nested call (counted by the watch of
   * `savepoint-watch.ts` while a savepoint is open): work of the callback beside that call, whose
   * statements went into the call's savepoint.
   */
  activity: number;
  /**
   * Set when a nested call rolled back to its savepoint while this callback's own code ran beside
   * it: statements of that code may have been undone with it, so the transaction must not commit.
   */
  lost: Error | undefined;
  /** What the call of this context locks and its verb, for messages (undefined for a caller's transaction). */
  readonly request: LockRequest | undefined;
  readonly verb: string | undefined;
  /**
   * Set for a `withSessionLock` callback: not a transaction to nest in (`tx` is undefined), but the
   * keys its session holds on a connection of its own, which no lock call from the callback can use.
   */
  readonly session?: SessionHold | undefined;
  /**
   * Set for a leader's `onElected`: its term. A `stop()` called from there is the callback
   * resigning, and must not wait for the callback it is called from (see {@link runningIn}).
   */
  readonly term?: object | undefined;
}

/** A lock call nested in a running context's transaction, until its savepoint is released or rolled back. */
export interface NestedCall {
  /** The nested call's own context (its callback runs there). */
  readonly context: LockContext;
  /** Resolves once the call is over (never rejects): nothing of it runs on the connection any more. */
  readonly ended: Promise<void>;
  /**
   * The call's promise and the promises chained on it: made by the outer callback waiting for the
   * call, not by its own work beside it (see `savepoint-watch.ts`).
   */
  readonly awaiting: WeakSet<object>;
}

interface ContextState {
  readonly storage: AsyncLocalStorage<LockContext>;
  /** Callbacks running in a context, in every copy of this module. */
  running: number;
  /** Pending: disable the store if no callback runs by then. */
  idle: ReturnType<typeof setTimeout> | undefined;
}

/**
 * How long the store stays enabled once no callback runs. Turning Node's promise hooks on and off
 * is not free (a `setPromiseHooks` each way): with calls back to back, every callback's end found
 * none running for an instant and paid both. Ten milliseconds spans those instants, and still
 * leaves an app that takes a lock now and then without the hooks nearly all the time.
 */
const IDLE_MS = 10;

// One store per process, not per copy of this module: an app that loads pglock both as ESM and as
// CommonJS still sees one callback's lock from the other copy (the key names the state's shape).
// Sealed: Jest 30 soft-deletes the properties of what a test file left on the global at teardown,
// and its setter for a plain property calls itself (jestjs/jest#16044, #16443; fix #16210 unmerged),
// so the idle timer's write after a test file ended overflowed the stack and crashed the Jest run
// (found by CI's Jest consumer app). Jest leaves a property that is not configurable alone.
const STATE = Symbol.for('pglock.lockContext.v3');
const shared = globalThis as Record<symbol, unknown>;
if (shared[STATE] === undefined) {
  const fresh: ContextState = { storage: new AsyncLocalStorage(), running: 0, idle: undefined };
  shared[STATE] = Object.seal(fresh);
}
const state = shared[STATE] as ContextState;

/** The innermost context of the running code, open or not (undefined outside every callback). */
export function currentContext(): LockContext | undefined {
  return state.storage.getStore();
}

/**
 * The connection of the lock callback running now, or `undefined` outside every callback: what an
 * adapter's hook scopes its notes by (Prisma's failure watch) without a context store of its own.
 */
export function currentLockConnection(): PortConnection | undefined {
  return state.storage.getStore()?.connection;
}

/**
 * The running context that `handle` belongs to: its root database, or its transaction. `from`: the
 * current context when the caller has read it already (one store lookup per lock call, not one per walk).
 */
export function contextFor(
  handle: unknown,
  from: LockContext | undefined = state.storage.getStore(),
): LockContext | undefined {
  for (let context = from; context !== undefined; context = context.parent) {
    if (context.open && context.session === undefined && (context.root === handle || context.tx === handle))
      return context;
  }
  return undefined;
}

/** The context whose transaction runs on `connection`-owning handle `tx`, if pglock opened it. */
export function contextOfTransaction(
  tx: unknown,
  from: LockContext | undefined = state.storage.getStore(),
): LockContext | undefined {
  for (let context = from; context !== undefined; context = context.parent) {
    if (context.open && context.session === undefined && context.tx === tx) return context;
  }
  return undefined;
}

// The transaction handles of pglock's own transactions whose handle is the callback's alone (not a
// pooled driver client that serves the next caller, see `LockPort.reusesTransactionHandle`): a lock
// call on one after its callback settled is refused however late it comes, also once the store is
// disabled. Weak: an entry lives only as long as the handle.
const transactions = new WeakMap<object, LockContext>();

/** Remembers `context`'s transaction handle for {@link settledTransaction}. */
export function rememberTransaction(context: LockContext): void {
  const { tx } = context;
  if (isHandle(tx) && tx !== context.root) transactions.set(tx, context);
}

/** An object or a function: postgres.js's transaction handle is a tagged-template function. */
function isHandle(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

/**
 * The settled callback whose transaction `handle` is: one the running code descends from (work the
 * callback left running), or one {@link rememberTransaction} kept. That transaction has ended and its
 * connection may serve another caller, so no lock call may use it. Called when no open context
 * matches `handle`. A handle that is also the callback's database (a lone `pg.Client`) is not one:
 * a call on the database takes a transaction of its own.
 */
export function settledTransaction(
  handle: unknown,
  from: LockContext | undefined = state.storage.getStore(),
): LockContext | undefined {
  if (!isHandle(handle)) return undefined;
  for (let context = from; context !== undefined; context = context.parent) {
    if (!context.open && context.session === undefined && context.tx === handle && context.root !== handle)
      return context;
  }
  const known = transactions.get(handle);
  return known !== undefined && !known.open ? known : undefined;
}

/** True when the running code is inside an open context whose `term` is `term`. */
export function runningIn(term: object): boolean {
  for (let context = state.storage.getStore(); context !== undefined; context = context.parent) {
    if (context.open && context.term === term) return true;
  }
  return false;
}

/**
 * A key of `keys` that a running `withSessionLock` callback on `root` holds in a mode that conflicts
 * with `shared` (undefined when none). A lock call for it from that callback would wait, on another
 * connection, for the callback's own session: PostgreSQL sees no deadlock there, so it waits forever.
 */
export function heldBySession(
  root: unknown,
  keys: readonly LockKey[],
  shared: boolean,
  from: LockContext | undefined = state.storage.getStore(),
): LockKey | undefined {
  for (let context = from; context !== undefined; context = context.parent) {
    const session = context.session;
    if (session === undefined || !context.open || context.root !== root || (shared && session.shared))
      continue;
    for (const key of keys) {
      if (session.keys.some((held) => compareLockKeys(held, key) === 0)) return key;
    }
  }
  return undefined;
}

/**
 * Runs `fn(arg)` with `context` as the current lock context (the argument spares a closure per
 * call), and keeps the store enabled meanwhile.
 *
 * The store is enabled only while some callback runs, and 10 ms after. On Node 20 and 22 an enabled
 * `AsyncLocalStorage` installs promise hooks that every promise of the process pays for (about a
 * third more CPU per node-postgres transaction, measured by the bench's scenario 0): an app that
 * takes a lock now and then should not pay for it on every other query. Disabling it with nothing
 * running loses no live context; a continuation that outlived its callback finds its context
 * closed either way.
 */
export async function enterContext<A, T>(
  context: LockContext,
  fn: (arg: A) => Promise<T>,
  arg: A,
): Promise<T> {
  state.running++;
  try {
    return await state.storage.run(context, fn, arg);
  } finally {
    leave();
  }
}

/**
 * Runs a callback in `context` ({@link enterContext}) and closes the context when it settles. A
 * nested call the callback left running is waited for (its statements run on this transaction's
 * connection, which must not end or go back to the pool under them), and then the callback's own
 * error is thrown, or else `LockUsageError` naming that call: the transaction is rolled back, never
 * committed with work nobody waited for. The same for a callback whose work ran beside a nested
 * call that rolled back to its savepoint ({@link LockContext.lost}).
 */
export async function runInContext<A, T>(
  context: LockContext,
  fn: (arg: A) => Promise<T>,
  arg: A,
): Promise<T> {
  state.running++;
  try {
    let value: T;
    let left: NestedCall | undefined;
    try {
      value = await state.storage.run(context, fn, arg);
    } finally {
      context.open = false;
      left = context.nested;
      if (left !== undefined) await left.ended;
    }
    if (left !== undefined) throw leftRunningError(context, left.context);
    if (context.lost !== undefined) throw context.lost;
    return value;
  } finally {
    leave();
  }
}

function leave(): void {
  if (--state.running === 0 && state.idle === undefined) {
    state.idle = setTimeout(disableIfIdle, IDLE_MS);
    // Never what keeps the process alive.
    state.idle.unref?.();
  }
}

/** The callback of `context` returned while the nested call of `inner` was still running. */
function leftRunningError(context: LockContext, inner: LockContext): LockUsageError {
  const verb = context.verb ?? 'withLock';
  return new LockUsageError(
    `${verb}: the callback under the ${describe(context)} returned while the nested ${inner.verb ?? 'call'} on the ${describe(inner)} it started was still running in its transaction. pglock waited for that call to end, then rolled the transaction back: nothing either callback wrote was saved. Await every nested call before the callback returns (a nested call runs inside the outer transaction and cannot outlive it).`,
    { keys: context.request?.keys },
  );
}

/** The keys of a context's call, for messages. */
export function describe(context: LockContext): string {
  return context.request === undefined ? 'lock of your transaction' : describeKeys(context.request);
}

function disableIfIdle(): void {
  state.idle = undefined;
  // A callback that started meanwhile schedules the next check when it ends.
  if (state.running === 0) state.storage.disable();
}
