import { lockKey } from '@pglock/core';
import { findPgBouncer, startPgBouncer } from '@pglock/test-kit';
import pg from 'pg';
import { chaosKeys } from './chaos-schema.ts';

/** A PgBouncer in transaction mode in front of the run's database, and what the controller asks it. */
export interface PoolerLane {
  /** The run's database through the pooler. */
  readonly url: string;
  /** Backend pids of the pooler's server connections to the run's database (its admin console's `SHOW SERVERS`). */
  serverPids(): Promise<number[]>;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in transaction mode in front of `url` (the run's database), or says why not (the
 * binary is missing). A private pooler: the run stops it once its workers are gone, which ends its
 * server connections and so anything they still hold.
 *
 * @example
 * ```ts
 * const lane = await startPoolerLane(runUrl);
 * if (typeof lane === 'string') console.log(`no pooler lane: ${lane}`);
 * ```
 */
export async function startPoolerLane(url: string): Promise<PoolerLane | string> {
  const binary = findPgBouncer();
  if (binary === undefined) return 'PgBouncer is not installed (apt-get install pgbouncer; .ci/run does)';
  const bouncer = await startPgBouncer(binary, url, 'transaction');
  const database = new URL(url).pathname.slice(1);
  const consoleUrl = new URL(bouncer.url);
  consoleUrl.pathname = '/pgbouncer';
  // The admin console speaks the simple query protocol only: node-postgres uses it for a query without values.
  const admin = new pg.Client({ connectionString: consoleUrl.href });
  admin.on('error', () => undefined);
  await admin.connect();
  return {
    url: bouncer.url,
    async serverPids() {
      const { rows } = await admin.query<{ database: string; remote_pid: string | number }>('SHOW SERVERS');
      return rows
        .filter((row) => row.database === database)
        .map((row) => Number(row.remote_pid))
        .filter((pid) => pid > 0);
    },
    async stop() {
      await admin.end().catch(() => undefined);
      await bouncer.stop();
    },
  };
}

const chaosKeyByTag = new Map(
  chaosKeys.map((name) => {
    const value = BigInt.asUintN(64, (lockKey(name) as { value: bigint }).value);
    return [`${value >> 32n}:${value & 0xffffffffn}`, name];
  }),
);

/**
 * Advisory locks held by an idle server connection of the pooler (not inside a transaction, so a
 * session lock): a refused session lock whose unlock landed on another backend would stay there.
 * A holder seen idle with the same lock in every scan for 1.5 s is a leak; shorter sightings are the
 * moments between a refused lock and its unlock.
 *
 * @example
 * ```ts
 * const leaks = new LeakScan();
 * await leaks.scan(db, await lane.serverPids()); // every few hundred ms during the run
 * console.log(leaks.found());
 * ```
 */
export class LeakScan {
  readonly #suspects = new Map<string, { readonly pid: number; readonly since: number }>();
  readonly #found = new Set<string>();

  async scan(db: pg.Client, poolerPids: readonly number[]): Promise<void> {
    const { rows } = await db.query<{ pid: number; tag: string }>(
      `SELECT l.pid, l.classid::text || ':' || l.objid::text AS tag
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND a.state = 'idle' AND l.pid = ANY($1::int[])`,
      [[...poolerPids]],
    );
    const now = performance.now();
    const seen = new Set(rows.map((row) => `${row.pid}|${row.tag}`));
    for (const id of this.#suspects.keys()) if (!seen.has(id)) this.#suspects.delete(id);
    for (const row of rows) {
      const id = `${row.pid}|${row.tag}`;
      const suspect = this.#suspects.get(id) ?? { pid: row.pid, since: now };
      this.#suspects.set(id, suspect);
      if (now - suspect.since >= 1_500) {
        this.#found.add(
          `pooler backend ${row.pid} sat idle holding ${chaosKeyByTag.get(row.tag) ?? row.tag} for over 1.5 s (a session lock left behind)`,
        );
      }
    }
  }

  add(leak: string): void {
    this.#found.add(leak);
  }

  suspectPids(): number[] {
    return [...new Set([...this.#suspects.values()].map((suspect) => suspect.pid))];
  }

  found(): string[] {
    return [...this.#found];
  }
}
