import { randomUUID } from 'node:crypto';
import { JOBS_TABLE_DDL } from '@pglock/core';
import { leader, runOnce } from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { JobsReport } from '../src/index.ts';
import { runCli } from './run-cli.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
const schemas: string[] = [];
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(async () => {
  for (const schema of schemas) await backdoor.query(`DROP SCHEMA ${schema} CASCADE`);
  await backdoor.close();
});

/** A schema of its own with `pglock_jobs` made by `ddl`, and a URL whose search_path finds it. */
async function schemaWith(ddl: string): Promise<{ schema: string; url: string }> {
  const schema = `pglock_cli_jobs_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  schemas.push(schema);
  await backdoor.query(`CREATE SCHEMA ${schema}`);
  await backdoor.query(`SET search_path TO ${schema}`);
  try {
    await backdoor.query(ddl);
  } finally {
    await backdoor.query('RESET search_path');
  }
  const at = new URL(url);
  at.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, url: at.href };
}

async function jobsJson(at: string, ...args: string[]): Promise<JobsReport> {
  const { code, stdout, stderr } = await runCli(['jobs', '--json', ...args], at);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as JobsReport;
}

describe('pglock jobs', () => {
  it('lists a runOnce job (schedule, last period, next due) and a leader (term, identity, since, holder pid and application), then "none" once it stopped', async () => {
    const { schema, url: at } = await schemaWith(JOBS_TABLE_DDL);
    const pool = new pg.Pool({ connectionString: at, max: 3, application_name: 'cli-jobs-leader' });
    pool.on('error', () => undefined);
    try {
      await runOnce(pool, 'digest', { per: '1d', namespace: 'mail' }, async () => undefined);
      let elected = 0;
      const campaign = leader(pool, 'scheduler', {
        identity: 'https://scheduler-1.internal',
        onElected: ({ term }) => {
          elected = term;
        },
      });
      let report: JobsReport;
      let holder: number | undefined;
      try {
        await backdoor.waitFor('the election', async () => elected > 0);
        const [lock] = await backdoor.query<{ pid: number }>(
          `SELECT l.pid FROM pg_locks AS l, ${schema}.pglock_jobs AS j
            WHERE j.name = 'scheduler' AND l.locktype = 'advisory' AND l.granted
              AND l.classid = ((j.key >> 32) & 4294967295)::oid AND l.objid = (j.key & 4294967295)::oid`,
        );
        holder = lock?.pid;
        report = await jobsJson(at);
        const { code, stdout } = await runCli(['jobs'], at);
        expect(code).toBe(0);
        expect(stdout).toContain('https://scheduler-1.internal');
        expect(stdout).toContain(`pid ${holder} (cli-jobs-leader)`);
        expect(stdout).toContain('digest [mail]');
        for (const line of stdout.split('\n')) expect([...line].length, line).toBeLessThanOrEqual(80);
      } finally {
        await campaign.stop();
      }
      expect(holder).toBeGreaterThan(0);
      // A day: the run and the report fall in one period unless they straddle midnight UTC.
      const day = 86_400_000;
      const start = Math.floor(Date.parse(report.takenAt) / day) * day;
      expect(report.jobs).toEqual([
        {
          key: expect.any(String),
          name: 'digest',
          namespace: 'mail',
          schedule: { perMs: day, cron: null, timeZone: null },
          lastRun: {
            periodStart: new Date(start).toISOString(),
            periodEnd: new Date(start + day).toISOString(),
            at: expect.any(String),
            durationMs: expect.any(Number),
            outcome: 'ok',
            attempts: 1,
            attemptPeriod: new Date(start).toISOString(),
            lastError: null,
          },
          nextDue: new Date(start + day).toISOString(),
          due: false,
          running: false,
        },
      ]);
      expect(report.leaders).toEqual([
        {
          key: expect.any(String),
          name: 'scheduler',
          namespace: null,
          term: elected,
          since: expect.any(String),
          identity: 'https://scheduler-1.internal',
          holder: { pid: holder, application: 'cli-jobs-leader' },
        },
      ]);
      const after = await jobsJson(at);
      expect(after.leaders).toEqual([
        expect.objectContaining({ name: 'scheduler', term: elected, holder: null }),
      ]);
      const { stdout } = await runCli(['jobs'], at);
      expect(stdout).toMatch(/held by {3}none/);
      // --namespace keeps that namespace's names only.
      const mail = await jobsJson(at, '--namespace', 'mail');
      expect([mail.jobs.map((j) => j.name), mail.leaders.length]).toEqual([['digest'], 0]);
    } finally {
      await pool.end();
    }
  });

  it('shows what the table has: an older one (no per_ms, no identity), and one with columns other versions add', async () => {
    const { schema: old, url: oldUrl } = await schemaWith(`CREATE TABLE pglock_jobs (
      key bigint PRIMARY KEY, name text NOT NULL, namespace text, period_start timestamptz,
      ran_at timestamptz, term bigint NOT NULL DEFAULT 0, elected_at timestamptz)`);
    await backdoor.query(
      `INSERT INTO ${old}.pglock_jobs VALUES (1, 'old-job', NULL, '2026-01-01T10:00:00Z', '2026-01-01T10:00:01Z', 0, NULL),
        (2, 'old-leader', NULL, NULL, NULL, 4, '2026-01-01T09:00:00Z')`,
    );
    const legacy = await jobsJson(oldUrl);
    expect(legacy.jobs).toEqual([
      expect.objectContaining({
        name: 'old-job',
        schedule: { perMs: null },
        lastRun: { periodStart: '2026-01-01T10:00:00.000Z', at: '2026-01-01T10:00:01.000Z' },
        nextDue: null,
      }),
    ]);
    expect(legacy.leaders).toEqual([
      {
        key: '2',
        name: 'old-leader',
        namespace: null,
        term: 4,
        since: '2026-01-01T09:00:00.000Z',
        holder: null,
      },
    ]);

    const { schema: wide, url: wideUrl } = await schemaWith(`${JOBS_TABLE_DDL}
      ALTER TABLE pglock_jobs ADD COLUMN something_newer jsonb;`);
    await backdoor.query(
      `INSERT INTO ${wide}.pglock_jobs (key, name, cron, time_zone, period_start, period_end, ran_at, run_ms, outcome, attempts, attempt_period, last_error)
        VALUES (-9223372036854775808, 'nightly', '0 3 * * *', 'Europe/Berlin', '2099-01-01T02:00:00Z', '2099-01-02T02:00:00Z',
          '2099-01-01T02:00:00.5Z', 1234, 'failed', 2, '2099-01-01T02:00:00Z', 'boom')`,
    );
    const report = await jobsJson(wideUrl);
    expect(report.jobs).toEqual([
      {
        key: '-9223372036854775808',
        name: 'nightly',
        namespace: null,
        schedule: { perMs: null, cron: '0 3 * * *', timeZone: 'Europe/Berlin' },
        lastRun: {
          periodStart: '2099-01-01T02:00:00.000Z',
          periodEnd: '2099-01-02T02:00:00.000Z',
          at: '2099-01-01T02:00:00.500Z',
          durationMs: 1234,
          outcome: 'failed',
          attempts: 2,
          attemptPeriod: '2099-01-01T02:00:00.000Z',
          lastError: 'boom',
        },
        nextDue: '2099-01-02T02:00:00.000Z',
        due: false,
        running: false,
      },
    ]);
    const { stdout } = await runCli(['jobs'], wideUrl);
    expect(stdout).toContain('cron 0 3 * * * (Europe/Berlin)');
    expect(stdout).toMatch(/ran 1\.2s, failed, 2 attempts/);
    expect(stdout).toContain('error     boom');
  });

  it('a database without pglock_jobs: an empty report and a warning naming `pglock schema`, exit 0', async () => {
    const { url: at } = await schemaWith('SELECT 1');
    const report = await jobsJson(at);
    expect(report).toMatchObject({ jobs: [], leaders: [] });
    expect(report.warnings).toEqual([expect.stringContaining('pglock schema')]);
  });
});
