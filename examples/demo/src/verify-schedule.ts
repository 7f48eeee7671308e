// The checks of the two scheduling jobs, read back from the database: the digest (runOnce) ran once
// per period, and the leader's terms never overlapped, rose strictly, and failed over after the kill.
import type pg from 'pg';
import { DIGEST_CRON } from './protocol.ts';
import type { Check, KillRecord } from './verify.ts';

/** What the digest rows show. */
export interface DigestOutcome {
  readonly runs: number;
  /** Most committed runs in any one period (1 when the job ran once per period). */
  readonly maxPerPeriod: number;
  /** Periods between the first and the last run that have no run. */
  readonly missedPeriods: number;
  /** Runs whose server timestamps do not meet the period they were recorded for. */
  readonly outsidePeriod: number;
}

/** What the leader terms show. */
export interface LeaderOutcome {
  readonly terms: number;
  /** Pairs of terms whose `[elected, last tick]` ranges (server clock) intersect. */
  readonly overlaps: number;
  readonly termsIncreasing: boolean;
  /** Fenced writes the scheduler made (each tick of a leader). */
  readonly ticks: number;
  /** The term in progress at the kill, and whether it was the killed instance's. */
  readonly killedLed: boolean | undefined;
  /** Server clock, from just before the kill to the next term's onElected. */
  readonly failoverMs: number | null;
  /** The same, to the moment pglock wrote the next term (on the new leader's lock connection). */
  readonly electionMs: number | null;
  readonly failoverBy: string | null;
}

interface TermRow {
  readonly term: number;
  readonly instance: string;
  /** Epoch ms: elected (pglock's elected_at, else onElected's first write), onElected, last tick. */
  readonly start: number;
  readonly noticed: number;
  readonly last: number;
  readonly elected: number | null;
  readonly ticks: number;
}

/** Reads the digest runs: per period (pglock's), and each run against the server's clock. */
export async function digestOutcome(admin: pg.Client, schema: string, perMs: number): Promise<DigestOutcome> {
  // A run's claim happens after its transaction began (tx_started_at) and before its row is written
  // (ran_at), so the claim's period must meet [tx_started_at, ran_at].
  const { rows } = await admin.query<DigestOutcome>(
    `WITH per AS (SELECT period_start, count(*)::int AS n FROM ${schema}.digests GROUP BY period_start)
     SELECT (SELECT count(*)::int FROM ${schema}.digests) AS "runs",
            coalesce((SELECT max(n) FROM per), 0)::int AS "maxPerPeriod",
            coalesce((SELECT round(extract(epoch FROM max(period_start) - min(period_start)) * 1000 / $1::int)::int + 1
                             - count(*)::int FROM per), 0) AS "missedPeriods",
            (SELECT count(*)::int FROM ${schema}.digests
              WHERE NOT (tx_started_at < period_end AND ran_at >= period_start)
                 OR period_end - period_start <> make_interval(secs => $1::int / 1000.0)) AS "outsidePeriod"`,
    [perMs],
  );
  return rows[0]!;
}

/** Reads the leader terms in election order and checks them against each other and the kill. */
export async function leaderOutcome(
  admin: pg.Client,
  schema: string,
  kill: KillRecord | undefined,
): Promise<LeaderOutcome> {
  const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;
  const { rows } = await admin.query<TermRow>(
    `SELECT term::int AS term, instance, ${ms('coalesce(elected_at, noticed_at)')} AS start,
            ${ms('noticed_at')} AS noticed, ${ms('coalesce(last_tick_at, noticed_at)')} AS last,
            ${ms('elected_at')} AS elected, ticks
       FROM ${schema}.leader_terms ORDER BY coalesce(elected_at, noticed_at), noticed_at`,
  );
  let overlaps = 0;
  rows.forEach((a, i) => {
    for (const b of rows.slice(i + 1)) if (a.last > b.start) overlaps++;
  });
  const termsIncreasing = rows.every((row, i) => i === 0 || row.term > rows[i - 1]!.term);
  let killedLed: boolean | undefined;
  let next: TermRow | undefined;
  if (kill) {
    const at = kill.serverAt.getTime();
    killedLed = rows.findLast((row) => row.start <= at)?.instance === kill.label;
    next = rows.find((row) => row.start > at);
  }
  return {
    terms: rows.length,
    overlaps,
    termsIncreasing,
    ticks: rows.reduce((sum, row) => sum + row.ticks, 0),
    killedLed,
    failoverMs: next && kill ? next.noticed - kill.serverAt.getTime() : null,
    electionMs: next?.elected != null && kill ? next.elected - kill.serverAt.getTime() : null,
    failoverBy: next?.instance ?? null,
  };
}

/** The rows of the verification table for both jobs. */
export function scheduleChecks(digest: DigestOutcome, leader: LeaderOutcome, killed: boolean): Check[] {
  const checks: Check[] = [
    {
      label: `digest runs (runOnce, cron ${DIGEST_CRON})`,
      value: String(digest.runs),
      ok: digest.runs > 0,
      rule: '> 0',
    },
    {
      label: 'runs per period',
      value: digest.runs === 0 ? 'none' : String(digest.maxPerPeriod),
      ok: digest.runs > 0 && digest.maxPerPeriod === 1,
      rule: 'must be 1',
    },
    {
      label: 'periods with no run',
      value: String(digest.missedPeriods),
      ok: digest.missedPeriods === 0,
      rule: 'must be 0',
    },
    {
      label: 'runs outside their period',
      value: String(digest.outsidePeriod),
      ok: digest.outsidePeriod === 0,
      rule: 'must be 0',
    },
    {
      label: 'leader terms (elections)',
      value: String(leader.terms),
      ok: leader.terms >= (killed ? 2 : 1),
      rule: killed ? '>= 2' : '>= 1',
    },
    {
      label: 'overlapping leaderships',
      value: String(leader.overlaps),
      ok: leader.overlaps === 0,
      rule: 'must be 0',
    },
    {
      label: 'terms strictly increasing',
      value: leader.termsIncreasing ? 'yes' : 'no',
      ok: leader.termsIncreasing,
      rule: 'must be yes',
    },
    {
      label: 'scheduler ticks (fenced writes)',
      value: String(leader.ticks),
      ok: leader.ticks > 0,
      rule: '> 0',
    },
  ];
  if (killed) {
    checks.push(
      {
        label: 'killed instance was the leader',
        value: leader.killedLed ? 'yes' : 'no',
        ok: leader.killedLed === true,
        rule: 'must be yes',
      },
      {
        label: 'failover: kill to new onElected',
        value: leader.failoverMs === null ? 'none' : `${Math.round(leader.failoverMs)} ms`,
        ok: leader.failoverMs !== null && leader.failoverMs < 1_000,
        rule: `< 1 s${leader.failoverBy ? ` (${leader.failoverBy})` : ''}`,
      },
    );
  }
  return checks;
}
