import * as v8 from 'node:v8';
import { currentContext, type LockContext } from './nesting.ts';

// `v8.promiseHooks` is experimental in Node. Read off the namespace, not imported by name: a runtime whose `node:v8` lacks it (Bun, Deno) still
// loads core, and only goes without the watch.
const hooks = (v8 as Partial<typeof v8>).promiseHooks;

/** Savepoints being watched (the hook is installed while there is one). */
let watched = 0;
let stopHook: (() => void) | undefined;

/**
 * The hook: a promise made by code running in a context that has a nested call is that callback's
 * own work going on beside the call, unless it is chained on the call's promise (the callback
 * waiting for it: an `await` of an async helper that returns the call resolves the helper's promise
 * with a `then` on the call's, made once the call has started).
 */
function notePromise(promise: Promise<unknown>, parent: Promise<unknown> | undefined): void {
  const context = currentContext();
  const nested = context?.nested;
  if (context === undefined || nested === undefined) return;
  if (parent !== undefined && nested.awaiting.has(parent)) nested.awaiting.add(promise);
  else context.activity++;
}

/**
 * Starts watching, while a nested call's savepoint is open, for the code of the callbacks it nests
 * in (its outer transaction's, up to pglock's own transaction on that connection) running beside
 * it. A statement such code sends goes into the savepoint, and `ROLLBACK TO SAVEPOINT` would undo it
 * with the nested call's work while the outer callback goes on as if it was written. pglock cannot
 * see statements sent on the ORM's handle, but it sees the code that sends them run: any promise it
 * makes while the savepoint is open. The returned function ends the watch and returns the contexts
 * whose code ran.
 *
 * Without promise hooks (a runtime without `v8.promiseHooks`) it returns none: the rule that a
 * nested call must be awaited before the callback does anything else is then the caller's to keep.
 *
 * @example
 * ```ts
 * const ranBeside = watchSavepoint(outer);
 * await connection.query(savepoint);
 * // … the nested call fails …
 * for (const context of ranBeside()) context.lost ??= lostWorkError(context, inner);
 * await connection.query(rollbackToSavepoint);
 * ```
 */
export function watchSavepoint(outer: LockContext): () => readonly LockContext[] {
  const contexts: LockContext[] = [];
  const seen: number[] = [];
  for (let context: LockContext | undefined = outer; context !== undefined; context = context.parent) {
    if (context.connection !== outer.connection || context.session !== undefined) break;
    contexts.push(context);
    seen.push(context.activity);
  }
  if (watched++ === 0 && hooks !== undefined) {
    const stop = hooks.onInit(notePromise);
    stopHook = () => stop();
  }
  let ended = false;
  return () => {
    if (ended) return [];
    ended = true;
    if (--watched === 0) {
      stopHook?.();
      stopHook = undefined;
    }
    return contexts.filter((context, i) => context.activity !== seen[i]);
  };
}

/**
 * Marks `promise`, a verb's own async layer over a nested call it just started (runOnce over its
 * nested lock), as the caller waiting for that call: the caller's `await` or `return` of it chains
 * on this promise, not on the call's, and must not count as its code running beside the call.
 *
 * @example
 * ```ts
 * // runJob starts the nested call before its first await:
 * const run = (job: () => Promise<string>) => asAwaitingNested(job());
 * ```
 */
export function asAwaitingNested<T>(promise: Promise<T>): Promise<T> {
  currentContext()?.nested?.awaiting.add(promise);
  return promise;
}
