import { formatDuration } from './duration.ts';
import { clean, fit, plainStyle, type Style, WIDTH } from './format.ts';
import type { JobEntry, JobsReport, LeaderEntry } from './jobs-report.ts';

/**
 * Renders a jobs report for a terminal: at most {@link WIDTH} columns, one block per job and per
 * leader, showing what the table records (a column it lacks is left out). Names, identities and
 * application names are stripped of control characters.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { formatJobsReport, readJobsReport, styleFor } from '@pglock/cli';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * process.stdout.write(formatJobsReport(await readJobsReport(pool), styleFor(process.stdout, process.env)));
 * ```
 */
export function formatJobsReport(report: JobsReport, style: Style = plainStyle): string {
  const now = Date.parse(report.takenAt);
  const lines = [
    `${style.bold(`${count(report.jobs.length, 'job')}, ${count(report.leaders.length, 'leader')}`)}  ${style.dim(`(${report.takenAt.slice(11, 19)} UTC)`)}`,
  ];
  if (report.jobs.length > 0) lines.push('', style.bold('Jobs'));
  for (const job of report.jobs) lines.push(...jobLines(job, now, style));
  if (report.leaders.length > 0) lines.push('', style.bold('Leaders'));
  for (const leader of report.leaders) lines.push(...leaderLines(leader, now, style));
  for (const warning of report.warnings) lines.push(style.yellow(`warning: ${clean(warning)}`));
  return `${lines.join('\n')}\n`;
}

function heading(entry: JobEntry | LeaderEntry, style: Style): string {
  const label =
    entry.namespace === null ? clean(entry.name) : `${clean(entry.name)} [${clean(entry.namespace)}]`;
  const room = WIDTH - entry.key.length - 4;
  return `  ${style.bold(fit(label, room))}  ${style.dim(entry.key)}`;
}

function jobLines(job: JobEntry, now: number, style: Style): string[] {
  const { schedule, lastRun } = job;
  const every =
    schedule.cron !== undefined && schedule.cron !== null
      ? `cron ${clean(schedule.cron)}${schedule.timeZone ? ` (${clean(schedule.timeZone)})` : ''}`
      : schedule.perMs !== null
        ? `per ${formatDuration(schedule.perMs)} (${schedule.perMs} ms)`
        : 'none recorded';
  // The period on a line of its own: with the run's time, duration, outcome and attempts beside it,
  // one line would not fit the 80 columns.
  const period =
    lastRun.periodStart === null
      ? undefined
      : `${when(lastRun.periodStart)}${lastRun.periodEnd ? ` to ${when(lastRun.periodEnd)}` : ''}`;
  const run: string[] = [];
  if (lastRun.at !== null) run.push(`at ${when(lastRun.at)}`);
  if (lastRun.durationMs !== undefined && lastRun.durationMs !== null)
    run.push(`ran ${formatDuration(lastRun.durationMs)}`);
  if (lastRun.outcome !== undefined && lastRun.outcome !== null) {
    const colour = lastRun.outcome === 'ok' || lastRun.outcome === 'ran' ? style.green : style.red;
    run.push(colour(clean(lastRun.outcome)));
  }
  if (lastRun.attempts !== undefined && lastRun.attempts !== null)
    run.push(`${count(lastRun.attempts, 'attempt')}`);
  const next =
    job.nextDue === null
      ? 'unknown'
      : job.due
        ? style.yellow(`now (since ${when(job.nextDue)})`)
        : `${when(job.nextDue)} (in ${formatDuration(Date.parse(job.nextDue) - now)})`;
  return [
    heading(job, style),
    `    schedule  ${every}${job.running ? style.green('  running now') : ''}`,
    ...(period === undefined ? [] : [`    period    ${period}`]),
    `    last run  ${run.length === 0 ? 'none' : run.join(', ')}`,
    ...(lastRun.lastError ? [`    error     ${fit(clean(lastRun.lastError), WIDTH - 14)}`] : []),
    `    next due  ${next}`,
  ];
}

function leaderLines(leader: LeaderEntry, now: number, style: Style): string[] {
  const since =
    leader.since === null
      ? ''
      : ` since ${when(leader.since)} (${formatDuration(now - Date.parse(leader.since))})`;
  const identity =
    leader.identity === undefined
      ? []
      : [`    identity  ${leader.identity === null ? '-' : fit(clean(leader.identity), WIDTH - 14)}`];
  const holder =
    leader.holder === null
      ? style.yellow('none (nobody leads: the last term ended)')
      : style.green(`pid ${leader.holder.pid} (${clean(leader.holder.application ?? '') || '-'})`);
  return [
    heading(leader, style),
    `    term      ${leader.term}${since}`,
    ...identity,
    `    held by   ${holder}`,
  ];
}

/** `2026-12-02 21:00:00 UTC` from an ISO time. */
function when(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
