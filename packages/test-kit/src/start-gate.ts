// The start gate of the multi-process scenarios: the test holds a lock, every worker waits for it
// in shared mode once it has started, and the test lets go when all of them wait, so that they begin
// together.
import { startupCapMs } from './child.ts';
import type { AdapterInstance } from './harness.ts';

/**
 * Waits, in shared mode, until the test lets go of the `gate` lock. Bounded by as long as the
 * slowest fellow worker may take to start (the gate opens only when every one of them waits at it),
 * and explicitly: an unbounded wait is still bounded on Prisma, by the transaction's own timeout
 * (5 s by default), which six Prisma workers starting on a loaded machine overran.
 *
 * @example
 * ```ts
 * import type { AdapterInstance } from '@pglock/test-kit';
 * import { passGate } from './start-gate.ts';
 *
 * declare const instance: AdapterInstance;
 * await passGate(instance, 'schedules-gate');
 * ```
 */
export async function passGate(instance: AdapterInstance, gate: string): Promise<void> {
  await instance.withLock(gate, async () => undefined, { shared: true, timeoutMs: startupCapMs });
}
