import type { Violation } from './history.ts';

/** One committed `runOnce` run, as its job wrote it (epoch microseconds, the server's clock). */
export interface JobRunRow {
  readonly id: number;
  readonly worker: string;
  readonly name: string;
  /** The period pglock gave the job. */
  readonly periodStart: bigint;
  readonly periodEnd: bigint;
  /** The run threw after writing this row: it must have rolled back. */
  readonly doomed: boolean;
  /** `now()`, the transaction's start (before the claim), and `clock_timestamp()` after it. */
  readonly txStart: bigint;
  readonly ranAt: bigint;
}

/** One term as pglock wrote it, logged by a trigger in the election statement (on the lock's connection). */
export interface ElectionRow {
  readonly id: number;
  readonly name: string;
  readonly term: number;
  readonly electedAt: bigint;
  readonly pid: number;
  /** That backend held the name's advisory lock as it wrote the term. */
  readonly held: boolean;
}

/** A tick recorded while the term's backend was seen holding the lock (see chaos-worker's VERIFIED_TICK). */
export interface TickRow {
  readonly name: string;
  readonly term: number;
  readonly at: bigint;
}

/** A write the fencing guard accepted, in the order the guard's row lock serialised them (by id). */
export interface FencedWriteRow {
  readonly id: number;
  readonly name: string;
  readonly term: number;
  readonly campaign: string;
}

/** What the schedule checker found. */
export interface ScheduleReport {
  readonly jobRuns: number;
  /** Distinct (job, period) pairs that ran. */
  readonly periods: number;
  readonly elections: number;
  readonly verifiedTicks: number;
  readonly fencedWrites: number;
  readonly violations: readonly Violation[];
}

/**
 * Checks the `runOnce` and `leader` history of a chaos run: no period of a job committed twice, every
 * run lies in its period by the server's clock, no run that threw committed; every term was written by
 * the backend holding the name's lock, terms rise strictly in election order, no two terms' lock-holding
 * intervals (from the election to the term's last verified tick) intersect, and the fencing guard never
 * accepted a lower term after a higher one, nor one term from two campaigns.
 *
 * @example
 * ```ts
 * const report = checkSchedules({ jobRuns, perOf: (name) => 300, elections, ticks, fencedWrites });
 * if (report.violations.length > 0) console.error(report.violations);
 * ```
 */
export function checkSchedules(history: {
  readonly jobRuns: readonly JobRunRow[];
  /** The period (ms) each job name is called with. */
  readonly perOf: (name: string) => number;
  readonly elections: readonly ElectionRow[];
  readonly ticks: readonly TickRow[];
  readonly fencedWrites: readonly FencedWriteRow[];
}): ScheduleReport {
  const violations = [
    ...jobViolations(history.jobRuns, history.perOf),
    ...electionViolations(history.elections, history.ticks),
    ...fenceViolations(history.fencedWrites),
  ];
  return {
    jobRuns: history.jobRuns.length,
    periods: new Set(history.jobRuns.map((run) => `${run.name}@${run.periodStart}`)).size,
    elections: history.elections.length,
    verifiedTicks: history.ticks.length,
    fencedWrites: history.fencedWrites.length,
    violations,
  };
}

function jobViolations(runs: readonly JobRunRow[], perOf: (name: string) => number): Violation[] {
  const found: Violation[] = [];
  const byPeriod = new Map<string, JobRunRow[]>();
  for (const run of runs) {
    const period = `${run.name}@${run.periodStart}`;
    byPeriod.set(period, [...(byPeriod.get(period) ?? []), run]);
    if (run.doomed) {
      found.push({
        kind: 'thrown-run-committed',
        key: run.name,
        detail: `${describeRun(run)} threw but committed`,
      });
    }
    // The claim's statement time lies in [txStart, ranAt]; its period must meet that span.
    const length = run.periodEnd - run.periodStart;
    if (
      length !== BigInt(perOf(run.name)) * 1000n ||
      !(run.txStart < run.periodEnd && run.ranAt >= run.periodStart)
    ) {
      found.push({
        kind: 'run-outside-period',
        key: run.name,
        detail: `${describeRun(run)} ran from ${run.txStart} to ${run.ranAt}`,
      });
    }
  }
  for (const [period, rows] of byPeriod) {
    if (rows.length > 1) {
      found.push({
        kind: 'period-run-twice',
        key: period.split('@')[0] as string,
        detail: `${rows.length} committed runs of one period: ${rows.map(describeRun).join(', ')}`,
      });
    }
  }
  return found;
}

function electionViolations(elections: readonly ElectionRow[], ticks: readonly TickRow[]): Violation[] {
  const found: Violation[] = [];
  const names = new Set([...elections.map((e) => e.name), ...ticks.map((t) => t.name)]);
  for (const name of names) {
    const terms = elections
      .filter((e) => e.name === name)
      .sort((a, b) => compare(a.electedAt, b.electedAt) || a.id - b.id);
    for (const election of terms) {
      if (!election.held) {
        found.push({
          kind: 'election-without-lock',
          key: name,
          detail: `term ${election.term} was written by backend ${election.pid}, which did not hold the lock`,
        });
      }
    }
    terms.forEach((election, i) => {
      const before = terms[i - 1];
      if (before !== undefined && election.term <= before.term) {
        found.push({
          kind: 'terms-not-increasing',
          key: name,
          detail: `term ${election.term} (at ${election.electedAt}) was elected after term ${before.term} (at ${before.electedAt})`,
        });
      }
    });
    // Each term held the lock from its election to its last verified tick.
    const last = new Map<number, bigint>();
    for (const tick of ticks.filter((t) => t.name === name)) {
      if (!terms.some((e) => e.term === tick.term)) {
        found.push({
          kind: 'tick-without-election',
          key: name,
          detail: `a verified tick of term ${tick.term}, which no election wrote`,
        });
      }
      const seen = last.get(tick.term);
      if (seen === undefined || tick.at > seen) last.set(tick.term, tick.at);
    }
    terms.forEach((a, i) => {
      const end = last.get(a.term) ?? a.electedAt;
      for (const b of terms.slice(i + 1)) {
        if (end > b.electedAt) {
          found.push({
            kind: 'leader-overlap',
            key: name,
            detail: `term ${a.term} (backend ${a.pid}) held the lock at ${end}, after term ${b.term} (backend ${b.pid}) was elected at ${b.electedAt}`,
          });
        }
      }
    });
  }
  return found;
}

function fenceViolations(writes: readonly FencedWriteRow[]): Violation[] {
  const found: Violation[] = [];
  const highest = new Map<string, FencedWriteRow>();
  const writerOf = new Map<string, string>();
  for (const write of [...writes].sort((a, b) => a.id - b.id)) {
    const top = highest.get(write.name);
    if (top !== undefined && write.term < top.term) {
      found.push({
        kind: 'fenced-term-regressed',
        key: write.name,
        detail: `write #${write.id} of term ${write.term} accepted after write #${top.id} of term ${top.term}`,
      });
    }
    if (top === undefined || write.term > top.term) highest.set(write.name, write);
    const term = `${write.name}@${write.term}`;
    const writer = writerOf.get(term);
    if (writer === undefined) writerOf.set(term, write.campaign);
    else if (writer !== write.campaign) {
      found.push({
        kind: 'term-shared',
        key: write.name,
        detail: `term ${write.term} wrote from two campaigns: ${writer} and ${write.campaign}`,
      });
    }
  }
  return found;
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function describeRun(run: JobRunRow): string {
  return `run #${run.id} (${run.worker}, period ${run.periodStart}..${run.periodEnd})`;
}
