import { onAbort } from './abort-listeners.ts';
import type { LockKey } from './lock-key.ts';
import { timerDelay } from './start-bound.ts';

/**
 * The in-process queue in front of the server. Callers of one process that want the same key line up
 * here, in arrival order, and only the head waits on the server, on a pooled connection: a burst of
 * waiters for one hot key holds one connection for the wait (plus the holder's), not the whole pool.
 * Shared-mode callers go through together. Across processes the order stays PostgreSQL's FIFO: the
 * head's server wait is an ordinary one.
 *
 * A slot is held from the moment a caller may wait on the server until its wait ended (granted or
 * not); holders are not in the queue, so the queue never waits on anything PostgreSQL cannot see.
 */
interface Slot {
  exclusive: boolean;
  shared: number;
  readonly waiting: Entry[];
}

interface Entry {
  readonly shared: boolean;
  grant(): void;
}

/** Why a queued caller left without its turn. */
export type QueueExit = 'timeout' | 'aborted';

// One queue per process, not per copy of this module (ESM and CommonJS copies share it).
const QUEUES = Symbol.for('pglock.waitQueues.v1');
const shared = globalThis as Record<symbol, unknown>;
if (shared[QUEUES] === undefined) shared[QUEUES] = new WeakMap();
const queues = shared[QUEUES] as WeakMap<object, Map<bigint | string, Slot>>;

function slotsOf(root: object): Map<bigint | string, Slot> {
  let slots = queues.get(root);
  if (slots === undefined) {
    slots = new Map();
    queues.set(root, slots);
  }
  return slots;
}

function slotFor(slots: Map<bigint | string, Slot>, id: bigint | string): Slot {
  let slot = slots.get(id);
  if (slot === undefined) {
    slot = { exclusive: false, shared: 0, waiting: [] };
    slots.set(id, slot);
  }
  return slot;
}

function idOf(key: LockKey): bigint | string {
  return key.form === 'bigint' ? key.value : `${key.pair[0]},${key.pair[1]}`;
}

function free(slot: Slot, shared: boolean): boolean {
  // Nobody queued ahead (FIFO: a shared caller does not overtake a queued exclusive one).
  if (slot.exclusive || slot.waiting.length > 0) return false;
  return shared || slot.shared === 0;
}

function take(slot: Slot, shared: boolean): void {
  if (shared) slot.shared++;
  else slot.exclusive = true;
}

function leave(slots: Map<bigint | string, Slot>, id: bigint | string, slot: Slot, shared: boolean): void {
  if (shared) slot.shared--;
  else slot.exclusive = false;
  // Hand the slot on in arrival order: one exclusive caller, or every shared caller at the head.
  while (slot.waiting.length > 0 && !slot.exclusive) {
    const next = slot.waiting[0] as Entry;
    if (!next.shared && slot.shared > 0) break;
    slot.waiting.shift();
    take(slot, next.shared);
    next.grant();
    if (!next.shared) break;
  }
  if (!slot.exclusive && slot.shared === 0 && slot.waiting.length === 0) slots.delete(id);
}

/**
 * Takes the queue slot of every key (in canonical order, so two multi-key callers cannot wait on
 * each other here). Resolves the release function, or the reason it gave up: the budget ran out
 * (`deadline`, from `performance.now()`) or `signal` fired. Synchronous when nobody is ahead.
 */
export function enterQueue(
  root: object,
  keys: readonly LockKey[],
  shared: boolean,
  deadline: number | undefined,
  signal: AbortSignal | undefined,
): (() => void) | Promise<(() => void) | QueueExit> {
  const slots = slotsOf(root);
  if (keys.length === 1) {
    // The common call: one key and nobody ahead, so one slot and one release function, nothing more.
    const id = idOf(keys[0] as LockKey);
    const slot = slotFor(slots, id);
    if (free(slot, shared)) {
      take(slot, shared);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        leave(slots, id, slot, shared);
      };
    }
  }
  const taken: [bigint | string, Slot][] = [];
  const releaseAll = (): void => {
    for (const [id, slot] of taken.splice(0)) leave(slots, id, slot, shared);
  };
  for (let i = 0; i < keys.length; i++) {
    const id = idOf(keys[i] as LockKey);
    const slot = slotFor(slots, id);
    if (free(slot, shared)) {
      take(slot, shared);
      taken.push([id, slot]);
      continue;
    }
    return queueRest(slots, keys, i, shared, deadline, signal, taken, releaseAll);
  }
  return releaseAll;
}

async function queueRest(
  slots: Map<bigint | string, Slot>,
  keys: readonly LockKey[],
  from: number,
  shared: boolean,
  deadline: number | undefined,
  signal: AbortSignal | undefined,
  taken: [bigint | string, Slot][],
  releaseAll: () => void,
): Promise<(() => void) | QueueExit> {
  for (let i = from; i < keys.length; i++) {
    const id = idOf(keys[i] as LockKey);
    const slot = slotFor(slots, id);
    if (!free(slot, shared)) {
      const exit = await waitTurn(slots, id, slot, shared, deadline, signal);
      if (exit !== undefined) {
        releaseAll();
        return exit;
      }
    } else take(slot, shared);
    taken.push([id, slot]);
  }
  return releaseAll;
}
function waitTurn(
  slots: Map<bigint | string, Slot>,
  id: bigint | string,
  slot: Slot,
  shared: boolean,
  deadline: number | undefined,
  signal: AbortSignal | undefined,
): Promise<QueueExit | undefined> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let unsubscribe: (() => void) | undefined;
    const done = (exit: QueueExit | undefined): void => {
      clearTimeout(timer);
      unsubscribe?.();
      resolve(exit);
    };
    const entry: Entry = { shared, grant: () => done(undefined) };
    const quit = (exit: QueueExit): void => {
      const at = slot.waiting.indexOf(entry);
      if (at < 0) return; // already granted
      slot.waiting.splice(at, 1);
      // A shared caller behind this one may be free to go now.
      if (at === 0 && !slot.exclusive) {
        while (slot.waiting[0]?.shared === true) {
          const next = slot.waiting.shift() as Entry;
          take(slot, true);
          next.grant();
        }
      }
      if (!slot.exclusive && slot.shared === 0 && slot.waiting.length === 0) slots.delete(id);
      done(exit);
    };
    slot.waiting.push(entry);
    if (deadline !== undefined) {
      timer = setTimeout(() => quit('timeout'), timerDelay(deadline));
    }
    if (signal !== undefined) {
      if (signal.aborted) {
        quit('aborted');
        return;
      }
      unsubscribe = onAbort(signal, () => quit('aborted'));
    }
  });
}
