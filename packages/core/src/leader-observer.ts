import { onAbort } from './abort-listeners.ts';
import type { LeaderInfo } from './current-leader.ts';
import { InvalidLockOptionsError } from './errors.ts';
import type { BigintLockKey, LockKey } from './lock-key.ts';
import { formatLockKey } from './lock-key.ts';
import { checkDuration, isAbortSignal } from './lock-options.ts';
import { checkOptionKeys, OBSERVE_LEADER_OPTION_KEYS } from './option-keys.ts';
import { jobKey } from './run-once.ts';

/**
 * Options of `observeLeader`.
 *
 * @example
 * ```ts
 * import type { ObserveLeaderOptions } from '@pglock/core';
 *
 * const options: ObserveLeaderOptions = {
 *   pollMs: 500,
 *   onChange: (leader) => console.log(leader === undefined ? 'no leader' : `term ${leader.term}: ${leader.identity}`),
 *   onError: (error) => console.error('observing the leader', error),
 * };
 * ```
 */
export interface ObserveLeaderOptions {
  /**
   * Called once with the first reading, then whenever the leader changes: a new term (or another
   * holder), or nobody leading any more (`undefined`). Calls never overlap: the next reading waits
   * for a returned promise. What it throws (or rejects) goes to `onError`.
   */
  readonly onChange: (
    leader: LeaderInfo | undefined,
    previous: LeaderInfo | undefined,
  ) => void | Promise<void>;
  /** Gets a failed reading (the database unreachable, `LockTableMissingError`) and `onChange`'s errors; observing goes on. Default: `process.emitWarning`. */
  readonly onError?: ((error: unknown) => void) | undefined;
  /** How often it reads (ms, default 1000, at least 10): a change is seen within about that. */
  readonly pollMs?: number | undefined;
  /** Mixed into the hash of the name, as for every lock (the campaign's `namespace`). */
  readonly namespace?: string | undefined;
  /** Aborting it stops the observer, as `stop()` does. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * A running observer of one name's leader: one `currentLeader` statement every `pollMs`, at most one
 * at a time, until `stop()` (or the signal).
 */
export interface LeaderObserver extends AsyncDisposable {
  readonly key: LockKey;
  /** The last reading (`undefined` before the first, or when nobody leads). */
  readonly leader: LeaderInfo | undefined;
  /**
   * Stops reading; resolves once a reading in flight has settled. It does not wait for an `onChange`
   * still running (which may call it). Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

const DEFAULT_POLL_MS = 1_000;

/** `observeLeader`: checks everything before any SQL (bad input throws from the call), then starts reading. */
export function startLeaderObserver(
  read: (key: BigintLockKey) => Promise<LeaderInfo | undefined>,
  name: unknown,
  options: ObserveLeaderOptions | undefined,
  defaultNamespace: string | undefined,
  verb = 'observeLeader',
): LeaderObserver {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionsError(`${verb}: options must be an object with onChange.`);
  }
  checkOptionKeys(options, OBSERVE_LEADER_OPTION_KEYS, verb);
  if (typeof options.onChange !== 'function') {
    throw new InvalidLockOptionsError(
      `${verb}: onChange must be a function; it gets the leader at start and on every change.`,
    );
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new InvalidLockOptionsError(`${verb}: onError must be a function.`);
  }
  if (options.signal !== undefined && !isAbortSignal(options.signal)) {
    throw new InvalidLockOptionsError(`${verb}: signal must be an AbortSignal.`);
  }
  const pollMs = checkDuration(options.pollMs ?? DEFAULT_POLL_MS, 'pollMs', verb, 10);
  const key = jobKey(name, options.namespace ?? defaultNamespace, verb);
  return new Observer(read, key, options, pollMs, verb);
}

class Observer implements LeaderObserver {
  readonly key: BigintLockKey;
  readonly #read: (key: BigintLockKey) => Promise<LeaderInfo | undefined>;
  readonly #options: ObserveLeaderOptions;
  readonly #pollMs: number;
  readonly #verb: string;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  #leader: LeaderInfo | undefined;

  constructor(
    read: (key: BigintLockKey) => Promise<LeaderInfo | undefined>,
    key: BigintLockKey,
    options: ObserveLeaderOptions,
    pollMs: number,
    verb: string,
  ) {
    this.key = key;
    this.#read = read;
    this.#options = options;
    this.#pollMs = pollMs;
    this.#verb = verb;
    const off = options.signal === undefined ? undefined : onAbort(options.signal, () => this.#stop.abort());
    // Everything the loop does is reported; nothing may become an unhandled rejection.
    this.#done = this.#observe()
      .catch((error: unknown) => this.#report(error))
      .finally(() => off?.());
  }

  get leader(): LeaderInfo | undefined {
    return this.#leader;
  }

  stop(): Promise<void> {
    this.#stop.abort();
    return this.#done;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  async #observe(): Promise<void> {
    const stopped = this.#stop.signal;
    let seen = false;
    while (!stopped.aborted) {
      let next: LeaderInfo | undefined;
      let read = false;
      try {
        next = await this.#read(this.key);
        read = true;
      } catch (error) {
        if (!stopped.aborted) this.#report(error);
      }
      if (read && !stopped.aborted && (!seen || changed(this.#leader, next))) {
        seen = true;
        const previous = this.#leader;
        this.#leader = next;
        const call = Promise.resolve()
          .then(() => this.#options.onChange(next, previous))
          .catch((error: unknown) => this.#report(error));
        // stop() ends the wait, so that an onChange calling (and awaiting) it does not wait for itself.
        await new Promise<void>((resolve) => {
          const off = onAbort(stopped, resolve);
          void call.finally(() => {
            off();
            resolve();
          });
        });
      }
      await sleep(this.#pollMs, stopped);
    }
  }

  #report(error: unknown): void {
    try {
      if (this.#options.onError !== undefined) this.#options.onError(error);
      else {
        const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        process.emitWarning(
          `${this.#verb} ${formatLockKey(this.key)}: ${detail} (pass onError to handle it).`,
          'PglockWarning',
        );
      }
    } catch {
      // A throwing onError must not end the observer, nor surface as an unhandled rejection.
    }
  }
}

/** Another leader: one appeared or went, or another term (or another backend) holds the name. */
function changed(before: LeaderInfo | undefined, after: LeaderInfo | undefined): boolean {
  if (before === undefined || after === undefined) return before !== after;
  return before.term !== after.term || before.pid !== after.pid;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const off = onAbort(signal, () => {
      clearTimeout(timer);
      resolve();
    });
    const timer = setTimeout(() => {
      off();
      resolve();
    }, ms);
  });
}
