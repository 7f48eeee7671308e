import type { LeaderCampaign, LeaderOptions } from '@pglock/core';
import type pg from 'pg';
import type { InstanceConfig } from '../protocol.ts';

/**
 * The jobs of an API instance, written once per adapter in that ORM's own style. Lock names are
 * passed in (not built here) so that the `--no-lock` debug mode can make them unique per call.
 */
export interface DemoAdapter {
  /**
   * `tryWithLock(lockName)`: writes a `rebuilds` row (server clock), calls `onHeld` with its id,
   * replaces the leaderboard slowly, stamps `finished_at`. False when another instance holds the lock
   * (for `timeoutMs`, when it did not get it in that time).
   */
  rebuild(lockName: string, onHeld: (rebuildId: number) => void, timeoutMs?: number): Promise<boolean>;
  /**
   * `runOnce(lockName, { cron })`: the digest job, which writes one `digests` row for its period (the
   * timestamps are the server's column defaults) in the job's transaction. Says whether this call ran it.
   */
  digest(lockName: string, cron: string): Promise<'ran' | 'done' | 'busy'>;
  /** `leader(name, options)` on the instance's pool (Prisma: `@pglock/pg` on the pool under `@prisma/adapter-pg`). */
  leader(name: string, options: LeaderOptions): LeaderCampaign;
  /** The instance's pg.Pool: the leader's scheduler writes through it (src/scheduler.ts). */
  readonly pool: pg.Pool;
  /**
   * `withLock(lockName)`: reads the user's score, sleeps, writes score + 1, and records a
   * `score_events` row in the same transaction (the ledger the verification sums).
   */
  addPoint(lockName: string, userId: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens one adapter on the run's schema and runs a first query, so that an instance that reports
 * ready has its connections open (and Prisma its query engine loaded): a short run should not spend
 * its first seconds starting up.
 */
export type OpenAdapter = (config: InstanceConfig) => Promise<DemoAdapter>;

/** A pause inside a transaction, standing for real work. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Connection settings every adapter's `pg.Pool` uses: the run's schema first on the search path. */
export function poolConfig(config: InstanceConfig) {
  return {
    connectionString: config.url,
    options: `-c search_path=${config.schema}`,
    application_name: `pglock-demo ${config.label}`,
    // Four jobs may each hold a connection at once, and a leader keeps one for its whole term.
    max: 6,
  };
}
