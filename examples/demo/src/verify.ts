// Reads the outcome back from the database, after every instance has stopped.
import { inspectLocks, lockKey } from '@pglock/pg';
import type pg from 'pg';
import { DIGEST_JOB, REBUILD_LOCK, SCHEDULER } from './protocol.ts';
import {
  type DigestOutcome,
  digestOutcome,
  type LeaderOutcome,
  leaderOutcome,
  scheduleChecks,
} from './verify-schedule.ts';

/** The SIGKILL of one instance while it held the rebuild lock. */
export interface KillRecord {
  readonly label: string;
  /** The rebuild the instance was in the middle of; its transaction must have rolled back. */
  readonly rebuildId: number;
  /** Wall clock, ms (for the timeline). */
  readonly at: number;
  /** The server's clock just before the kill (recovery and failover are measured on server timestamps). */
  readonly serverAt: Date;
  /** The term the instance reported leading when it was killed. */
  readonly term: number | undefined;
}

export interface Check {
  readonly label: string;
  readonly value: string;
  /** Undefined for figures that are shown but not checked. */
  readonly ok: boolean | undefined;
  readonly rule?: string;
}

export interface Verification {
  readonly rebuilds: number;
  readonly rebuildsByInstance: Readonly<Record<string, number>>;
  readonly skips: number;
  readonly updates: number;
  readonly overlaps: number;
  readonly lostUpdates: number;
  readonly locksLeft: number;
  readonly kill:
    | {
        readonly label: string;
        readonly rebuildRolledBack: boolean;
        readonly recoveryMs: number | null;
        readonly recoveredBy: string | null;
        readonly updatesAfter: number;
      }
    | undefined;
  readonly digest: DigestOutcome;
  readonly leader: LeaderOutcome;
  readonly checks: readonly Check[];
  readonly ok: boolean;
}

/** What the controller knows besides the database. */
export interface VerifyInput {
  readonly schema: string;
  readonly namespace: string;
  readonly users: number;
  readonly skips: number;
  readonly kill: KillRecord | undefined;
  /** Labels of instances (other than the killed one) that did not exit with code 0. */
  readonly crashed: readonly string[];
  /** The digest job's period. */
  readonly digestPerMs: number;
  /** What the leader campaigns reported to onError (none expected: the database stays up). */
  readonly leaderErrors: readonly string[];
}

/** Runs the checks; every figure but `skips` comes from the database. */
export async function verify(admin: pg.Client, input: VerifyInput): Promise<Verification> {
  const { schema } = input;
  const one = async <R>(text: string, values: unknown[] = []) =>
    (await admin.query(text, values)).rows[0] as R;
  const byInstance = await admin.query<{ instance: string; n: number }>(
    `SELECT instance, count(*)::int AS n FROM ${schema}.rebuilds GROUP BY instance ORDER BY instance`,
  );
  const rebuilds = byInstance.rows.reduce((sum, row) => sum + row.n, 0);
  const { overlaps } = await one<{ overlaps: number }>(
    `SELECT count(*)::int AS overlaps FROM ${schema}.rebuilds a JOIN ${schema}.rebuilds b
       ON a.id < b.id AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)`,
  );
  // Each committed update wrote +1 and one ledger row in one transaction: per user, score = rows.
  const { updates, lost } = await one<{ updates: number; lost: number }>(
    `SELECT coalesce(sum(e.n), 0)::int AS updates, coalesce(sum(abs(coalesce(e.n, 0) - u.score)), 0)::int AS lost
     FROM ${schema}.users u
     LEFT JOIN (SELECT user_id, count(*) AS n FROM ${schema}.score_events GROUP BY user_id) e ON e.user_id = u.id`,
  );
  const locksLeft = await demoLocksHeld(admin, input);
  const kill = input.kill ? await killOutcome(admin, schema, input.kill) : undefined;
  const digest = await digestOutcome(admin, schema, input.digestPerMs);
  const leader = await leaderOutcome(admin, schema, input.kill);

  const checks: Check[] = [
    { label: 'rebuilds run', value: String(rebuilds), ok: rebuilds > 0, rule: '> 0' },
    { label: 'rebuilds skipped (lock busy)', value: String(input.skips), ok: undefined },
    { label: 'score updates committed', value: String(updates), ok: updates > 0, rule: '> 0' },
    { label: 'overlapping rebuilds', value: String(overlaps), ok: overlaps === 0, rule: 'must be 0' },
    { label: 'lost score updates', value: String(lost), ok: lost === 0, rule: 'must be 0' },
    { label: 'locks left held', value: String(locksLeft), ok: locksLeft === 0, rule: 'must be 0' },
  ];
  if (kill) {
    checks.push(
      {
        label: `killed rebuild rolled back (${kill.label})`,
        value: kill.rebuildRolledBack ? 'yes' : 'no',
        ok: kill.rebuildRolledBack,
        rule: 'must be yes',
      },
      {
        label: 'recovery: kill to next rebuild',
        value: kill.recoveryMs === null ? 'none' : `${(kill.recoveryMs / 1000).toFixed(2)} s`,
        ok: kill.recoveryMs !== null,
        rule: kill.recoveredBy ? `by ${kill.recoveredBy}` : 'must happen',
      },
      {
        label: 'score updates after the kill',
        value: String(kill.updatesAfter),
        ok: kill.updatesAfter > 0,
        rule: '> 0',
      },
    );
  }
  checks.push(...scheduleChecks(digest, leader, input.kill !== undefined));
  checks.push({
    label: 'leader campaign errors',
    value: String(input.leaderErrors.length),
    ok: input.leaderErrors.length === 0,
    rule: 'must be 0',
  });
  checks.push({
    label: 'instances that crashed',
    value: input.crashed.length === 0 ? '0' : input.crashed.join(', '),
    ok: input.crashed.length === 0,
    rule: 'must be 0',
  });
  return {
    rebuilds,
    rebuildsByInstance: Object.fromEntries(byInstance.rows.map((row) => [row.instance, row.n])),
    skips: input.skips,
    updates,
    overlaps,
    lostUpdates: lost,
    locksLeft,
    kill,
    digest,
    leader,
    checks,
    ok: checks.every((check) => check.ok !== false),
  };
}

/** Advisory locks on the demo's own keys still in `pg_locks` (held or awaited). */
async function demoLocksHeld(admin: pg.Client, input: VerifyInput): Promise<number> {
  const names = [
    REBUILD_LOCK,
    DIGEST_JOB,
    SCHEDULER,
    ...Array.from({ length: input.users }, (_, i) => `user:${i + 1}`),
  ];
  const keys = new Set(names.map((name) => lockKey(name, { namespace: input.namespace })).map(keyText));
  return (await inspectLocks(admin)).filter((lock) => keys.has(keyText(lock.key))).length;
}

function keyText(key: ReturnType<typeof lockKey>): string {
  return key.form === 'bigint' ? String(key.value) : key.pair.join(',');
}

async function killOutcome(admin: pg.Client, schema: string, kill: KillRecord) {
  const left = await admin.query(`SELECT 1 FROM ${schema}.rebuilds WHERE id = $1`, [kill.rebuildId]);
  const next = await admin.query<{ instance: string; ms: number }>(
    `SELECT instance, (extract(epoch FROM started_at - $1::timestamptz) * 1000)::float8 AS ms
     FROM ${schema}.rebuilds WHERE started_at > $1::timestamptz ORDER BY started_at LIMIT 1`,
    [kill.serverAt],
  );
  const after = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema}.score_events WHERE at > $1::timestamptz`,
    [kill.serverAt],
  );
  return {
    label: kill.label,
    rebuildRolledBack: left.rowCount === 0,
    recoveryMs: next.rows[0]?.ms ?? null,
    recoveredBy: next.rows[0]?.instance ?? null,
    updatesAfter: after.rows[0]?.n ?? 0,
  };
}
