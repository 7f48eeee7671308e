import { afterEach, describe, expect, it, vi } from 'vitest';
import { lockKey } from '../src/index.ts';
import type { PortConnection } from '../src/lock-port.ts';
import {
  contextFor,
  contextOfTransaction,
  currentContext,
  heldBySession,
  type LockContext,
  runInContext,
  type SessionHold,
} from '../src/nesting.ts';

// No statement runs in these tests: the connection only has to exist.
const connection: PortConnection = { query: async () => [] };

function context(
  fields: { root?: object; tx?: unknown; parent?: LockContext; session?: SessionHold } = {},
): LockContext {
  const { root = {}, tx = fields.session ? undefined : {}, parent, session } = fields;
  return {
    root,
    tx,
    connection,
    depth: (parent?.depth ?? 0) + 1,
    parent,
    nested: undefined,
    open: true,
    activity: 0,
    lost: undefined,
    request: undefined,
    verb: undefined,
    session,
  };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('runInContext', () => {
  // First in the file, so that no idle timer of an earlier test is pending (the state is per process).
  it('idles the store 10 ms after the last callback, and the next callback still carries its context', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await runInContext(context(), async () => undefined, undefined);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(9);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(vi.getTimerCount()).toBe(0);

    const next = context();
    const seen = await runInContext(
      next,
      async () => {
        await tick();
        return currentContext();
      },
      undefined,
    );
    expect(seen).toBe(next);
    // One timer, not one per callback: a callback that ends with the timer pending adds none.
    await runInContext(context(), async () => undefined, undefined);
    expect(vi.getTimerCount()).toBe(1);
    // Let the idle check run before the real timers come back, so later tests start from a fresh state.
    vi.advanceTimersByTime(10);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('outside every callback there is no context', () => {
    expect(currentContext()).toBeUndefined();
    expect(contextFor({})).toBeUndefined();
  });

  it('passes the argument, resolves the callback’s value, and closes the context when it settles', async () => {
    const ctx = context();
    const value = await runInContext(
      ctx,
      async (arg: number) => {
        expect(ctx.open).toBe(true);
        return arg * 2;
      },
      21,
    );
    expect(value).toBe(42);
    expect(ctx.open).toBe(false);
    expect(currentContext()).toBeUndefined();
  });

  it('rejects with the callback’s error, and closes the context then too', async () => {
    const ctx = context();
    const failure = new Error('callback failed');
    await expect(runInContext(ctx, () => Promise.reject(failure), undefined)).rejects.toBe(failure);
    expect(ctx.open).toBe(false);
  });

  it('the context follows the callback through awaits, timers and microtasks', async () => {
    const ctx = context();
    const seen = await runInContext(
      ctx,
      async () => {
        const found: (LockContext | undefined)[] = [currentContext()];
        await Promise.resolve();
        found.push(currentContext());
        await tick();
        found.push(currentContext());
        found.push(
          await new Promise<LockContext | undefined>((resolve) =>
            setTimeout(() => resolve(currentContext()), 1),
          ),
        );
        found.push(
          await new Promise<LockContext | undefined>((resolve) =>
            queueMicrotask(() => resolve(currentContext())),
          ),
        );
        return found;
      },
      undefined,
    );
    expect(seen).toEqual([ctx, ctx, ctx, ctx, ctx]);
    expect(seen.every((found) => found === ctx)).toBe(true);
  });

  it('callbacks running at once each see their own context', async () => {
    const contexts = [context(), context(), context()];
    const seen = await Promise.all(
      contexts.map((ctx, i) =>
        runInContext(
          ctx,
          async (delay: number) => {
            const found = [currentContext()];
            for (let n = 0; n < delay; n++) await tick();
            found.push(currentContext());
            return found;
          },
          3 - i,
        ),
      ),
    );
    expect(seen).toEqual(contexts.map((ctx) => [ctx, ctx]));
    for (const [i, found] of seen.entries()) expect(found.every((c) => c === contexts[i])).toBe(true);
  });

  it('a nested callback sees its own context, and the outer one again once it returns', async () => {
    const outer = context();
    const inner = context({ root: outer.root, tx: outer.tx, parent: outer });
    const seen = await runInContext(
      outer,
      async () => {
        const during = await runInContext(inner, async () => currentContext(), undefined);
        return { during, after: currentContext(), innerOpen: inner.open, outerOpen: outer.open };
      },
      undefined,
    );
    expect(seen.during).toBe(inner);
    expect(seen.after).toBe(outer);
    expect(seen).toMatchObject({ innerOpen: false, outerOpen: true });
    expect(inner.depth).toBe(2);
  });

  it('work a callback left running still sees its context, but closed: contextFor no longer finds it', async () => {
    const ctx = context();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let leftover: Promise<{ current: LockContext | undefined; found: LockContext | undefined }> | undefined;
    await runInContext(
      ctx,
      async () => {
        leftover = gate.then(() => ({ current: currentContext(), found: contextFor(ctx.root) }));
        expect(contextFor(ctx.root)).toBe(ctx);
      },
      undefined,
    );
    release();
    const late = await leftover;
    expect(late?.current).toBe(ctx);
    expect(late?.found).toBeUndefined();
  });
});

describe('contextFor and contextOfTransaction', () => {
  it('find the running context by its root handle or its transaction, walking out through parents', () => {
    const db = {};
    const other = {};
    const outer = context({ root: db });
    const inner = context({ root: other, parent: outer });
    expect(contextFor(db, inner)).toBe(outer);
    expect(contextFor(outer.tx, inner)).toBe(outer);
    expect(contextFor(other, inner)).toBe(inner);
    expect(contextFor(inner.tx, inner)).toBe(inner);
    expect(contextFor({}, inner)).toBeUndefined();
    expect(contextFor(db, undefined)).toBeUndefined();
  });

  it('take the innermost match, and skip closed and session contexts', () => {
    const db = {};
    const outer = context({ root: db });
    const savepoint = context({ root: db, tx: outer.tx, parent: outer });
    const session = context({
      root: db,
      parent: savepoint,
      session: { keys: [lockKey('s')], shared: false },
    });
    expect(contextFor(db, session)).toBe(savepoint);
    savepoint.open = false;
    expect(contextFor(db, session)).toBe(outer);
    outer.open = false;
    expect(contextFor(db, session)).toBeUndefined();
  });

  it('read the current context by default', async () => {
    const ctx = context();
    const found = await runInContext(
      ctx,
      async () => [
        contextFor(ctx.root),
        contextFor(ctx.tx),
        contextOfTransaction(ctx.tx),
        contextOfTransaction(ctx.root),
      ],
      undefined,
    );
    expect(found).toEqual([ctx, ctx, ctx, undefined]);
    expect(found[3]).toBeUndefined();
  });

  it('contextOfTransaction finds an enclosing transaction, open and not a session', async () => {
    const outer = context();
    const session = context({
      root: outer.root,
      parent: outer,
      session: { keys: [lockKey('s')], shared: true },
    });
    const found = await runInContext(
      outer,
      () =>
        runInContext(
          session,
          async () => [contextOfTransaction(outer.tx), contextOfTransaction(undefined)],
          undefined,
        ),
      undefined,
    );
    expect(found[0]).toBe(outer);
    // The session context's `tx` is undefined: it is not a transaction to find.
    expect(found[1]).toBeUndefined();
  });
});

describe('heldBySession', () => {
  const db = {};
  const a = lockKey('held:a');
  const b = lockKey('held:b');
  const c = lockKey({ pair: [1, 2] });

  it('names a key a running session callback on the same root holds, in a conflicting mode', () => {
    const exclusive = context({ root: db, session: { keys: [a, c], shared: false } });
    expect(heldBySession(db, [b, c], false, exclusive)).toEqual(c);
    expect(heldBySession(db, [b, a], true, exclusive)).toEqual(a);
    expect(heldBySession(db, [b], false, exclusive)).toBeUndefined();
    expect(heldBySession(db, [lockKey({ pair: [2, 1] })], false, exclusive)).toBeUndefined();
  });

  it('shared held and shared wanted do not conflict; exclusive wanted does', () => {
    const shared = context({ root: db, session: { keys: [a], shared: true } });
    expect(heldBySession(db, [a], true, shared)).toBeUndefined();
    expect(heldBySession(db, [a], false, shared)).toBe(a);
  });

  it('ignores another root, a closed session, and transaction contexts, and looks through parents', () => {
    const session = context({ root: db, session: { keys: [a], shared: false } });
    const tx = context({ root: db, parent: session });
    expect(heldBySession(db, [a], false, tx)).toBe(a);
    expect(heldBySession({}, [a], false, tx)).toBeUndefined();
    expect(heldBySession(db, [a], false, context({ root: db }))).toBeUndefined();
    session.open = false;
    expect(heldBySession(db, [a], false, tx)).toBeUndefined();
  });

  it('reads the current context by default', async () => {
    const session = context({ root: db, session: { keys: [b], shared: false } });
    const found = await runInContext(session, async () => heldBySession(db, [b], true), undefined);
    expect(found).toBe(b);
    expect(heldBySession(db, [b], true)).toBeUndefined();
  });
});
