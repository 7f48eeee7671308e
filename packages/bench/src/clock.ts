/**
 * Microseconds on the system-wide monotonic clock (CLOCK_MONOTONIC, what `process.hrtime` reads on
 * Linux and macOS): every process on this machine reads the same clock, so stamps taken in different
 * worker processes can be compared directly.
 *
 * @example
 * ```ts
 * const start = nowUs();
 * ```
 */
export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** The three moments of one lock cycle, stamped where each design can see them. */
export interface Stamps {
  /** Just before the first lock request leaves the process. */
  arrival: number;
  /** When the caller's code runs with the lock held. */
  acquired: number;
  /** Just before the release (COMMIT, unlock) is sent. */
  released: number;
}

/** A fresh stamp record. */
export function stamps(): Stamps {
  return { arrival: 0, acquired: 0, released: 0 };
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
