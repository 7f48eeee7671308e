import { AsyncLocalStorage } from 'node:async_hooks';
import type { PortConnection } from './lock-port.ts';

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
  readonly parent: LockContext | undefined;
  /** A nested call is running directly in this context (a second one at once would interleave savepoints). */
  busy: boolean;
}

// One store per process, not per copy of this module: an app that loads pglock both as ESM and as
// CommonJS still sees one callback's lock from the other copy (the key names the context's shape).
const STORAGE = Symbol.for('pglock.lockContext.v1');
const shared = globalThis as Record<symbol, unknown>;
if (shared[STORAGE] === undefined) shared[STORAGE] = new AsyncLocalStorage<LockContext>();
const storage = shared[STORAGE] as AsyncLocalStorage<LockContext>;

/** The running context that `handle` belongs to: its root database, or its transaction. */
export function contextFor(handle: unknown): LockContext | undefined {
  for (let context = storage.getStore(); context !== undefined; context = context.parent) {
    if (context.root === handle || context.tx === handle) return context;
  }
  return undefined;
}

/** The context whose transaction runs on `connection`-owning handle `tx`, if pglock opened it. */
export function contextOfTransaction(tx: unknown): LockContext | undefined {
  for (let context = storage.getStore(); context !== undefined; context = context.parent) {
    if (context.tx === tx) return context;
  }
  return undefined;
}

/** Runs `fn(arg)` with `context` as the current lock context (the argument spares a closure per call). */
export function runInContext<A, T>(context: LockContext, fn: (arg: A) => Promise<T>, arg: A): Promise<T> {
  return storage.run(context, fn, arg);
}
