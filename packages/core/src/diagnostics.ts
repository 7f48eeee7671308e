import { channel } from 'node:diagnostics_channel';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockScope } from './lock-statements.ts';

/**
 * The `node:diagnostics_channel` channels pglock publishes on (the Node convention undici and others
 * use: zero cost without subscribers). Subscribe with `diagnostics_channel.subscribe(name, fn)`.
 *
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * import { lockChannels, type LockAcquiredEvent } from '@pglock/core';
 *
 * subscribe(lockChannels.acquired, (message) => {
 *   const event = message as LockAcquiredEvent;
 *   console.log(`${event.keys.length} key(s) after ${event.waitMs.toFixed(1)} ms`);
 * });
 * ```
 */
export const lockChannels = {
  requested: 'pglock:lock:requested',
  acquired: 'pglock:lock:acquired',
  notAcquired: 'pglock:lock:not-acquired',
  released: 'pglock:lock:released',
  lost: 'pglock:lock:lost',
} as const;

/** Fields every lock event carries. */
export interface LockEventBase {
  /** Correlates the events of one acquisition (requested → acquired → released). */
  readonly id: number;
  readonly keys: readonly LockKey[];
  /** Names of the keys that came from names (`undefined` for numeric keys). */
  readonly names: readonly (string | undefined)[];
  readonly scope: LockScope;
  readonly mode: 'exclusive' | 'shared';
  readonly timeoutMs: number | undefined;
}
/** Published before the first lock statement is sent. */
export type LockRequestedEvent = LockEventBase;
/** Published when every key is held; `waitMs` from request to grant. */
export interface LockAcquiredEvent extends LockEventBase {
  readonly waitMs: number;
}
/** Published when the call ends without the lock. */
export interface LockNotAcquiredEvent extends LockEventBase {
  readonly waitMs: number;
  readonly reason: 'busy' | 'timeout' | 'aborted' | 'deadlock' | 'error';
  readonly error: unknown;
}
/**
 * Published when pglock knows the lock is released: after the COMMIT/ROLLBACK of a transaction it
 * opened (`withLock`), or a session release. A lock taken with `lock(tx, …)` in your own transaction is
 * released by your COMMIT, which pglock does not see, so it publishes no `released` event.
 */
export interface LockReleasedEvent extends LockEventBase {
  readonly heldMs: number;
}
/** Published when a held session lock's connection died. */
export interface LockLostEvent extends LockEventBase {
  readonly heldMs: number;
  readonly error: unknown;
}

const channels = {
  requested: channel(lockChannels.requested),
  acquired: channel(lockChannels.acquired),
  notAcquired: channel(lockChannels.notAcquired),
  released: channel(lockChannels.released),
  lost: channel(lockChannels.lost),
};
let nextId = 1;

/** The events of one lock call, as core reports them. */
export interface Trace {
  requested(): void;
  acquired(): void;
  notAcquired(reason: LockNotAcquiredEvent['reason'], error?: unknown): void;
  released(): void;
  lost(error: unknown): void;
}

/** The trace of calls nobody subscribes to: every method does nothing (compare by identity). */
export const silentTrace: Trace = Object.freeze({
  requested() {},
  acquired() {},
  notAcquired() {},
  released() {},
  lost() {},
});

function anySubscribers(): boolean {
  return (
    channels.requested.hasSubscribers ||
    channels.acquired.hasSubscribers ||
    channels.notAcquired.hasSubscribers ||
    channels.released.hasSubscribers ||
    channels.lost.hasSubscribers
  );
}

/**
 * A trace for one call: a {@link LockTrace} while anyone subscribes to {@link lockChannels}, else a
 * shared one that does nothing (the channels cost nothing without subscribers, and neither do we).
 */
export function startTrace(request: LockRequest, scope: LockScope): Trace {
  return anySubscribers() ? new LockTrace(request, scope) : silentTrace;
}

/**
 * The events of one acquisition. Adapters create one per call (core does it for the transaction
 * helpers) and report the session lifecycle with it.
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core/internal';
 * import { LockTrace } from './diagnostics.ts';
 *
 * const trace = new LockTrace(lockRequest('leader'), 'session');
 * trace.released();
 * ```
 */
export class LockTrace implements Trace {
  readonly #base: LockEventBase;
  readonly #requestedAt = performance.now();
  #acquiredAt: number | undefined;

  constructor(request: LockRequest, scope: LockScope) {
    this.#base = {
      id: nextId++,
      keys: request.keys,
      names: request.keys.map((key) => (key.form === 'bigint' ? key.name : undefined)),
      scope,
      mode: request.shared ? 'shared' : 'exclusive',
      timeoutMs: request.timeoutMs,
    };
  }

  requested(): void {
    if (channels.requested.hasSubscribers) channels.requested.publish(this.#base);
  }

  acquired(): void {
    this.#acquiredAt = performance.now();
    if (channels.acquired.hasSubscribers) {
      channels.acquired.publish({ ...this.#base, waitMs: this.#acquiredAt - this.#requestedAt });
    }
  }

  notAcquired(reason: LockNotAcquiredEvent['reason'], error?: unknown): void {
    if (channels.notAcquired.hasSubscribers) {
      channels.notAcquired.publish({
        ...this.#base,
        waitMs: performance.now() - this.#requestedAt,
        reason,
        error,
      });
    }
  }

  released(): void {
    if (this.#acquiredAt === undefined) return;
    if (channels.released.hasSubscribers) {
      channels.released.publish({ ...this.#base, heldMs: performance.now() - this.#acquiredAt });
    }
    this.#acquiredAt = undefined;
  }

  lost(error: unknown): void {
    if (this.#acquiredAt === undefined) return;
    if (channels.lost.hasSubscribers) {
      channels.lost.publish({ ...this.#base, heldMs: performance.now() - this.#acquiredAt, error });
    }
    this.#acquiredAt = undefined;
  }
}
