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
 * The verdict of a chaos run, as its first printed line: `PASS: 0 violations, 0 hung, 0 unexpected
 * crashes`, or `FAIL: …` with the same three counts.
 *
 * @example
 * ```ts
 * console.log(chaosVerdict(result)); // PASS: 0 violations, 0 hung, 0 unexpected crashes
 * ```
 */
export function chaosVerdict(result: ChaosResult): string {
  const counts = `${result.violations.length} violations, ${result.hung} hung, ${unexpectedCrashes(result).length} unexpected crashes`;
  return `${chaosPassed(result) ? 'PASS' : 'FAIL'}: ${counts}`;
}

/**
 * A chaos run as printable lines: the verdict first, then the counts, then what failed the run (hangs,
 * violations, unexpected crashes), then the excused findings under their own heading (each with the
 * named upstream bug or the reason it does not fail the run).
 *
 * @example
 * ```ts
 * console.log(formatChaos(await runChaos({ url, seconds: 20 })));
 * ```
 */
export function formatChaos(result: ChaosResult): string {
  const lines = [
    chaosVerdict(result),
    `sections ${result.sections} (exclusive ${result.exclusive}, shared ${result.shared}; under session locks ${result.session}) in ${result.seconds} s`,
    `kills ${result.kills}, terminations ${result.terminations}, freezes (SIGSTOP) ${result.freezes}`,
    `tries busy ${result.busy}, waits timed out ${result.timedOut}, calls failed by the faults ${result.errors}`,
    `session locks held ${result.sessionHeld}, lost ${result.sessionLost}; through PgBouncer: refused ${result.sessionRefused}, granted ${result.poolerSessionLocks}`,
    `runOnce: calls ran ${result.jobsRan}, done ${result.jobsDone}, busy ${result.jobsBusy}, threw on purpose ${result.jobsThrown}, past maxRunMs ${result.jobsTimedOut}; committed runs ${result.schedules.jobRuns} in ${result.schedules.periods} periods (${count(result, 'period-run-twice')} run twice)`,
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
  for (const violation of result.violations.slice(0, 20)) {
    lines.push(`  VIOLATION ${violation.kind} on ${violation.key}: ${violation.detail}`);
  }
  for (const crash of unexpectedCrashes(result)) {
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
  const excused = [
    ...result.strandedCalls.map((stranded) => `  hang (upstream, named): ${stranded}`),
    ...result.crashes.flatMap((crash) =>
      crash.knownBug ? [`  crash of ${crash.adapter}: ${crash.knownBug}`] : [],
    ),
    ...result.teardowns.map((teardown) => {
      const issue = upstreamIssueOf(teardown);
      return issue
        ? `  teardown finding, upstream ${issue}: ${teardown}`
        : `  open teardown finding, no known cause: ${teardown}`;
    }),
    ...(result.slowStarts.length > 0
      ? [`  still starting at the end (never in a call, not a hang): ${result.slowStarts.join(', ')}`]
      : []),
  ];
  if (excused.length > 0) lines.push('', `Excused findings (${excused.length}, not failures):`, ...excused);
  return lines.join('\n');
}

function count(result: ChaosResult, kind: ChaosResult['violations'][number]['kind']): number {
  return result.violations.filter((violation) => violation.kind === kind).length;
}
