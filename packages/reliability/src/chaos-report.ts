import type { ChaosCrash, ChaosResult } from './chaos.ts';
import { upstreamIssueOf } from './teardown-evidence.ts';

/**
 * Crashes that fail a run: every crash except a postgres.js write-timer crash whose fatal write was
 * the ORM's own COMMIT/ROLLBACK (see `ChaosCrash.knownBug`).
 *
 * @example
 * ```ts
 * if (unexpectedCrashes(result).length > 0) process.exitCode = 1;
 * ```
 */
export function unexpectedCrashes(result: ChaosResult): readonly ChaosCrash[] {
  return result.crashes.filter((crash) => crash.knownBug === undefined);
}

/**
 * True when the run holds: no violation, no hung worker, no unexpected crash.
 *
 * @example
 * ```ts
 * process.exitCode = chaosPassed(result) ? 0 : 1;
 * ```
 */
export function chaosPassed(result: ChaosResult): boolean {
  return result.violations.length === 0 && result.hung === 0 && unexpectedCrashes(result).length === 0;
}

/**
 * The counts of a chaos run as printable lines, violations, hangs and crashes listed after (each
 * crash with its verdict).
 *
 * @example
 * ```ts
 * console.log(formatChaos(await runChaos({ url, seconds: 20 })));
 * ```
 */
export function formatChaos(result: ChaosResult): string {
  const lines = [
    `sections ${result.sections} (exclusive ${result.exclusive}, shared ${result.shared}; under session locks ${result.session}) in ${result.seconds} s`,
    `kills ${result.kills}, terminations ${result.terminations}`,
    `tries busy ${result.busy}, waits timed out ${result.timedOut}, calls failed by the faults ${result.errors}`,
    `session locks held ${result.sessionHeld}, lost ${result.sessionLost}; through PgBouncer: refused ${result.sessionRefused}, granted ${result.poolerSessionLocks}`,
    `runOnce: calls ran ${result.jobsRan}, done ${result.jobsDone}, busy ${result.jobsBusy}, threw on purpose ${result.jobsThrown}; committed runs ${result.schedules.jobRuns} in ${result.schedules.periods} periods (${count(result, 'period-run-twice')} run twice)`,
    `leader: campaigns ${result.campaigns}, terms led ${result.terms} (lost ${result.termsLost}), elections ${result.schedules.elections} (${count(result, 'leader-overlap')} overlapping, ${count(result, 'terms-not-increasing')} out of order), verified ticks ${result.schedules.verifiedTicks}, fenced writes accepted ${result.schedules.fencedWrites}, refused ${result.fencedRefused}; through PgBouncer: refused ${result.leaderRefused}`,
    'processes' in result.pooler
      ? `PgBouncer lane (transaction mode): ${result.pooler.processes} workers`
      : `PgBouncer lane: skipped (${result.pooler.skipped})`,
    `per adapter: ${Object.entries(result.byAdapter)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}`,
    `violations ${result.violations.length}, hung ${result.hung} (and ${result.strandedCalls.length} stuck in a named upstream bug), crashed ${result.crashes.length} (unexpected ${unexpectedCrashes(result).length})`,
  ];
  for (const hang of result.hungAdapters) lines.push(`  HUNG ${hang}`);
  if (result.slowStarts.length > 0) {
    lines.push(`  still starting at the end (never in a call, not a hang): ${result.slowStarts.join(', ')}`);
  }
  for (const violation of result.violations.slice(0, 20)) {
    lines.push(`  VIOLATION ${violation.kind} on ${violation.key}: ${violation.detail}`);
  }
  for (const teardown of result.teardowns) {
    const issue = upstreamIssueOf(teardown);
    lines.push(
      issue
        ? `teardown finding, upstream ${issue} (not a failure): ${teardown}`
        : `open teardown finding, no known cause (not a failure): ${teardown}`,
    );
  }
  for (const stranded of result.strandedCalls) {
    lines.push(`  excused hang (upstream, named): ${stranded}`);
  }
  for (const crash of result.crashes) {
    if (crash.knownBug) lines.push(`  excused crash of ${crash.adapter}: ${crash.knownBug}`);
    else {
      const fatal = crash.fatalWrite;
      const closed = fatal?.closedBefore
        ? `, closed ${fatal.closedMsBefore} ms before${fatal.writtenSinceClose ? ' and written to since' : ' and dead since'}`
        : '';
      const query = /^QUERY (.*)$/m.exec(crash.stderr)?.[1];
      const unhandled = query ? ` [unhandled rejection of: ${query}]` : '';
      const write = fatal
        ? ` [fatal write on connection ${fatal.connection}${closed}: ${fatal.statements.join(' + ') || 'unknown statement'}]`
        : '';
      lines.push(`  CRASH ${crash.adapter}${write}${unhandled}: ${crash.stderr.trim().slice(-600)}`);
    }
  }
  return lines.join('\n');
}

function count(result: ChaosResult, kind: ChaosResult['violations'][number]['kind']): number {
  return result.violations.filter((violation) => violation.kind === kind).length;
}
