import { randomUUID } from 'node:crypto';
import { JOBS_TABLE_DDL } from '@pglock/core';
import { Backdoor } from '@pglock/test-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runMain } from './run-cli.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

describe('pglock schema', () => {
  it('prints the DDL of pglock_jobs, which creates the table runOnce and leader use', async () => {
    const { code, stdout } = await runMain(['schema']);
    expect(code).toBe(0);
    expect(stdout).toBe(`${JOBS_TABLE_DDL}\n`);
    // Run as printed, in a schema of its own (then dropped), twice: it is idempotent.
    const schema = `pglock_cli_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await backdoor.query(`CREATE SCHEMA ${schema}`);
    try {
      await backdoor.query(`SET search_path TO ${schema}`);
      await backdoor.query(stdout);
      await backdoor.query(stdout);
      const columns = await backdoor.query(
        `SELECT column_name, data_type, is_nullable FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = 'pglock_jobs' ORDER BY ordinal_position`,
        [schema],
      );
      expect(columns.map((c) => c.column_name)).toEqual([
        'key',
        'name',
        'namespace',
        'period_start',
        'ran_at',
        'term',
        'elected_at',
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
