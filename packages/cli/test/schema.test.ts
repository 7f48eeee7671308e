import { randomUUID } from 'node:crypto';
import { JOBS_TABLE_DDL, JOBS_TABLE_UPGRADE_DDL } from '@pglock/core';
import { Backdoor } from '@pglock/test-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runMain } from './run-cli.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

async function columnsOf(schema: string): Promise<unknown[]> {
  const columns = await backdoor.query(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = 'pglock_jobs' ORDER BY ordinal_position`,
    [schema],
  );
  return columns.map((c) => c.column_name);
}

describe('pglock schema', () => {
  it('prints the DDL of pglock_jobs, which creates the table runOnce and leader use, then the upgrade of an older one', async () => {
    const { code, stdout } = await runMain(['schema']);
    expect(code).toBe(0);
    expect(stdout.startsWith(`${JOBS_TABLE_DDL}\n`)).toBe(true);
    expect(stdout.endsWith(`\n${JOBS_TABLE_UPGRADE_DDL}\n`)).toBe(true);
    // Run as printed, in a schema of its own (then dropped), twice: it is idempotent.
    const schema = `pglock_cli_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await backdoor.query(`CREATE SCHEMA ${schema}`);
    try {
      await backdoor.query(`SET search_path TO ${schema}`);
      await backdoor.query(stdout);
      await backdoor.query(stdout);
      expect(await columnsOf(schema)).toEqual([
        'key',
        'name',
        'namespace',
        'per_ms',
        'period_start',
        'ran_at',
        'term',
        'elected_at',
        'run_ms',
        'outcome',
        'attempts',
        'attempt_period',
        'last_error',
      ]);
    } finally {
      await backdoor.query('RESET search_path');
      await backdoor.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });

  it('brings a table an older pglock created (no per_ms) up to date, keeping its rows', async () => {
    const { stdout } = await runMain(['schema']);
    const schema = `pglock_cli_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await backdoor.query(`CREATE SCHEMA ${schema}`);
    try {
      await backdoor.query(`SET search_path TO ${schema}`);
      await backdoor.query(`CREATE TABLE pglock_jobs (
        key bigint PRIMARY KEY, name text NOT NULL, namespace text, period_start timestamptz,
        ran_at timestamptz, term bigint NOT NULL DEFAULT 0, elected_at timestamptz)`);
      await backdoor.query(`INSERT INTO pglock_jobs (key, name, term) VALUES (1, 'old', 7)`);
      await backdoor.query(stdout);
      expect(await columnsOf(schema)).toContain('per_ms');
      expect(await backdoor.query('SELECT key::int, name, term::int, per_ms FROM pglock_jobs')).toEqual([
        { key: 1, name: 'old', term: 7, per_ms: null },
      ]);
    } finally {
      await backdoor.query('RESET search_path');
      await backdoor.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });

  it('takes no arguments', async () => {
    const { code, stderr } = await runMain(['schema', 'extra']);
    expect(code).toBe(64);
    expect(stderr).toMatch(/^pglock: unexpected argument "extra"\nUsage: pglock schema\n/);
  });
});
