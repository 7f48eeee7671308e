// Scenario 7, second part: connection economy of plain session locks (issue 26 item 4). One process
// (@pglock/pg over a pg.Pool) takes 10, 100 and 1,000 session locks at once and holds them: it
// prints the server backends that hold them (pg_locks) and the pool's open connections, the time to
// hold them all and to release them all, with the default `connection: 'shared'` and, where the
// server's max_connections allows it, `connection: 'dedicated'` (a connection per lock, as before).
import { randomUUID } from 'node:crypto';
import { advisoryLocks, type SessionConnection, type SessionLock } from '@pglock/pg';
import pg from 'pg';

/** The most locks the dedicated form is measured with: each takes one of max_connections (100). */
const DEDICATED_MAX = 50;

/**
 * Prints one row per count and mode.
 *
 * @example
 * ```ts
 * await heldSessionLocks(url, [10, 100, 1_000]);
 * ```
 */
export async function heldSessionLocks(url: string, counts: readonly number[]): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  console.log('\n7b. connection economy of held session locks (one process, taken at once)');
  console.log(
    'locks | connection | backends holding them | pool connections | all held in | all released in',
  );
  try {
    for (const count of counts) {
      for (const mode of ['shared', 'dedicated'] as const satisfies readonly SessionConnection[]) {
        if (mode === 'dedicated' && count > DEDICATED_MAX) {
          console.log(
            `${String(count).padStart(5)} | ${mode.padEnd(10)} | not run: one connection per lock exceeds max_connections`,
          );
          continue;
        }
        const pool = new pg.Pool({ connectionString: url, max: mode === 'shared' ? 10 : DEDICATED_MAX + 2 });
        pool.on('error', () => undefined);
        const locks = advisoryLocks(pool, { connection: mode });
        const prefix = `bench-session:${randomUUID()}`;
        let handles: SessionLock[] = [];
        try {
          const started = performance.now();
          handles = await Promise.all(
            Array.from({ length: count }, (_, i) => locks.acquireSessionLock(`${prefix}:${i}`)),
          );
          const heldIn = performance.now() - started;
          const { rows } = await admin.query<{ n: number }>(
            "SELECT count(DISTINCT l.pid)::int AS n FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted AND l.pid = ANY($1::int[])",
            [[...new Set(handles.map((handle) => handle.pid))]],
          );
          const open = pool.totalCount;
          const releasing = performance.now();
          await Promise.all(handles.map((handle) => handle.release()));
          const releasedIn = performance.now() - releasing;
          handles = [];
          console.log(
            `${String(count).padStart(5)} | ${mode.padEnd(10)} | ${String(rows[0]?.n).padStart(21)} | ${String(open).padStart(16)} | ${heldIn.toFixed(0).padStart(8)} ms | ${releasedIn.toFixed(0).padStart(12)} ms`,
          );
        } finally {
          await Promise.allSettled(handles.map((handle) => handle.release()));
          await pool.end();
        }
      }
    }
  } finally {
    await admin.end();
  }
}
