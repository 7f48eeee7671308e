import { readFileSync } from 'node:fs';
import { Backdoor } from '@pglock/test-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keyInfo } from '../src/index.ts';
import { runMain as inProcess, runCli } from './run-cli.ts';

interface Vector {
  name: string;
  namespace?: string;
  key: string;
  classid: number;
  objid: number;
}
const { vectors } = JSON.parse(
  readFileSync(new URL('../../../docs/key-vectors.json', import.meta.url), 'utf8'),
) as { vectors: Vector[] };

const url = inject('databaseUrl');
let backdoor: Backdoor;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(() => backdoor.close());

describe('pglock key', () => {
  it.each(vectors.map((v) => [JSON.stringify(v.name) + (v.namespace ? ` in ${v.namespace}` : ''), v]))(
    'matches docs/key-vectors.json and the SQL computes the same key: %s',
    async (_label, vector) => {
      const v = vector as Vector;
      const argv = ['key', v.name, ...(v.namespace ? ['--namespace', v.namespace] : []), '--json'];
      const { code, stdout } = await inProcess(argv);
      expect(code).toBe(0);
      const info = JSON.parse(stdout);
      expect(info).toMatchObject({ key: v.key, classid: v.classid, objid: v.objid, objsubid: 1 });
      const [row] = await backdoor.query(`SELECT (${info.sql})::text AS key`);
      expect(row?.key).toBe(v.key);
    },
  );

  it('the binary prints key, halves and a SQL expression that fits 80 columns and pastes as SQL', async () => {
    const { code, stdout } = await runCli(['key', 'leaderboard', '--namespace', 'my-app'], url);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('key      3356594629188546540');
    expect(lines[1]).toBe('pg_locks classid 781518087, objid 4291063788, objsubid 1');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    const sql = lines.slice(2).join('\n').replace(/^sql/, '');
    const [row] = await backdoor.query(`SELECT (${sql})::text AS key`);
    expect(row?.key).toBe('3356594629188546540');
  });

  it('quotes a name with a quote, and computes it on the server', async () => {
    const info = keyInfo("it's; DROP TABLE x; --");
    const [row] = await backdoor.query(`SELECT (${info.sql})::text AS key`);
    expect(row?.key).toBe(info.key);
  });

  it('an empty name or namespace is a usage error (64), before anything else', async () => {
    expect((await inProcess(['key', ''])).code).toBe(64);
    const bad = await inProcess(['key', 'x', '--namespace', '']);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/namespace must be a non-empty string/);
    expect((await inProcess(['key'])).code).toBe(64);
  });
});
