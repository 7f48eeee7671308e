// What the controller (main.ts) and the instance processes say to each other over Node's IPC channel.
import type { AdapterName } from './options.ts';

/** Everything one instance process needs, passed as JSON in PGLOCK_DEMO_INSTANCE. */
export interface InstanceConfig {
  readonly index: number;
  readonly label: string;
  readonly adapter: AdapterName;
  readonly url: string;
  /** The run's own schema; every table lives there. */
  readonly schema: string;
  /** Lock namespace of the run, so that concurrent runs on one database never share keys. */
  readonly namespace: string;
  readonly users: number;
  readonly lock: boolean;
  /** How long a rebuild holds its lock (the "expensive" part). */
  readonly rebuildHoldMs: number;
  /** Pause between two rebuild attempts of one instance. */
  readonly rebuildEveryMs: number;
  /** The sleep between reading a score and writing it back: the window a lost update needs. */
  readonly thinkMs: number;
  /** Mean pause between two calls of the digest job (runOnce) by one instance. */
  readonly digestEveryMs: number;
  /** The digest job's period (`per` of runOnce). */
  readonly digestPerMs: number;
  /** How often the elected leader's scheduler ticks (one fenced write each). */
  readonly tickMs: number;
}

/** The name of the rebuild lock; per-user locks are `user:<id>`. */
export const REBUILD_LOCK = 'leaderboard:rebuild';

/**
 * The digest job's schedule: a cron expression with seconds, one period per second (croner's 6-field
 * form). The verification checks its runs against 1 s periods (`digestPerMs`).
 */
export const DIGEST_CRON = '* * * * * *';

/** The once-per-period job every instance fires (`runOnce`). */
export const DIGEST_JOB = 'digest';

/** The leadership every instance campaigns for (`leader`); the leader runs the scheduler. */
export const SCHEDULER = 'scheduler';

/** Lock events as `node:diagnostics_channel` reports them inside the instance. */
export type LockEventKind = 'requested' | 'acquired' | 'not-acquired' | 'released';

export type InstanceMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'lock';
      readonly event: LockEventKind;
      /** Correlates the events of one acquisition within this process. */
      readonly id: number;
      readonly name: string;
      /** Wall clock, ms since the epoch. */
      readonly at: number;
      readonly waitMs?: number;
    }
  /** Sent from inside the rebuild's transaction, after its row is written: the moment to kill. */
  | { readonly type: 'rebuild-held'; readonly rebuildId: number; readonly at: number }
  | { readonly type: 'rebuilt' }
  | { readonly type: 'skipped' }
  | { readonly type: 'updated' }
  /** One call of the digest job: whether this call ran it, or why not. */
  | { readonly type: 'digest'; readonly outcome: 'ran' | 'done' | 'busy'; readonly at: number }
  /** onElected ran (wall clock); `ended` once its signal aborted and the scheduler stopped. */
  | { readonly type: 'elected'; readonly term: number; readonly at: number }
  | { readonly type: 'term-ended'; readonly term: number; readonly at: number }
  | { readonly type: 'leader-error'; readonly message: string }
  | { readonly type: 'bye' };

export type ControllerMessage =
  | { readonly type: 'start'; readonly endAt: number }
  /** To the leader, at the kill time: rebuild now, waiting for the lock, so that it dies leading and rebuilding. */
  | { readonly type: 'rebuild-now' };
