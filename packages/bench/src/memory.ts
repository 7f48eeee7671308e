import { withLock } from '@pglock/pg';
import pg from 'pg';
import { WORK_SQL } from './database.ts';

/** Memory after a number of lock cycles, measured after a full GC. */
export interface MemoryPoint {
  readonly cycles: number;
  readonly rssMb: number;
  readonly heapUsedMb: number;
}

export interface MemoryResult {
  readonly points: readonly MemoryPoint[];
  /** Heap growth per lock cycle from the first checkpoint (after warm-up) to the last, in bytes. */
  readonly heapBytesPerCycle: number;
  readonly rssGrowthMb: number;
  /** False when gc() was not exposed (node --expose-gc): figures then include garbage. */
  readonly gcExposed: boolean;
}

const MB = 1024 * 1024;

/**
 * Scenario 4: `cycles` withLock cycles (pg adapter, 4 concurrent loops, distinct keys) with memory
 * read after a forced GC at ten checkpoints. The first checkpoint comes after 10% of the cycles, so
 * pool connections, JIT and caches are warm before growth is measured.
 *
 * @example
 * ```ts
 * const result = await runMemory(url, 100_000);
 * ```
 */
export async function runMemory(url: string, cycles: number): Promise<MemoryResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // An idle pooled client ended by the server (a shutdown, a terminated backend) must not end the run.
  pool.on('error', () => undefined);
  const points: MemoryPoint[] = [];
  const step = Math.ceil(cycles / 10);
  let done = 0;
  try {
    for (let checkpoint = 1; checkpoint <= 10; checkpoint++) {
      const target = Math.min(cycles, checkpoint * step);
      await Promise.all(
        Array.from({ length: 4 }, async (_, loop) => {
          while (done < target) {
            const key = BigInt(++done) + (1n << 41n);
            await withLock(pool, key, (client) => client.query(WORK_SQL, [loop + 1]));
          }
        }),
      );
      gc?.();
      gc?.();
      const usage = process.memoryUsage();
      points.push({ cycles: done, rssMb: usage.rss / MB, heapUsedMb: usage.heapUsed / MB });
    }
  } finally {
    await pool.end();
  }
  const first = points[0]!;
  const last = points.at(-1)!;
  return {
    points,
    heapBytesPerCycle: ((last.heapUsedMb - first.heapUsedMb) * MB) / Math.max(1, last.cycles - first.cycles),
    rssGrowthMb: last.rssMb - first.rssMb,
    gcExposed: gc !== undefined,
  };
}
