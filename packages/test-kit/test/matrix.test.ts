import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { suites } from '../src/conformance.ts';
import type { AdapterHarness } from '../src/harness.ts';
import { entryId, type MatrixEntry, processesElsewhere, selectSuites } from '../src/matrix.ts';

const packages = new URL('../../', import.meta.url);
const adapters = readdirSync(packages).filter((name) =>
  existsSync(new URL(`${name}/test/matrix.ts`, packages)),
);
const allSuites = Object.keys(suites);
const kebab = (key: string) =>
  key.replace(/ViaPgBouncer$/, '.pgbouncer').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

describe('the test matrix (no axis of coverage dropped)', () => {
  it('is declared by every adapter', () => {
    expect(adapters.sort()).toEqual(['drizzle', 'kysely', 'pg', 'postgres', 'prisma']);
  });

  for (const adapter of adapters) {
    describe(adapter, () => {
      it('every harness its harness.ts exports is a row; every row has its test file; one primary', async () => {
        const { matrix } = (await import(`../../${adapter}/test/matrix.ts`)) as {
          matrix: Record<string, MatrixEntry>;
        };
        const module = (await import(`../../${adapter}/test/harness.ts`)) as Record<string, unknown>;
        const harnesses = Object.values(module).filter(
          (value): value is AdapterHarness =>
            typeof value === 'object' && value !== null && 'capabilities' in value && 'open' in value,
        );
        const rows = Object.values(matrix);
        for (const harness of harnesses) {
          expect(
            rows.some((row) => row.harness === harness),
            `${harness.name} is in no row of ${adapter}/test/matrix.ts`,
          ).toBe(true);
        }
        for (const [key, row] of Object.entries(matrix)) {
          const file = new URL(`${adapter}/test/conformance.${kebab(key)}.test.ts`, packages);
          expect(existsSync(file), `${adapter}: no test file for matrix.${key}`).toBe(true);
          expect(readFileSync(file, 'utf8')).toContain(`runMatrixEntry(matrix.${key})`);
          if (row.suites !== 'all') for (const name of row.suites) expect(allSuites).toContain(name);
        }
        expect(rows.filter((row) => row.primary)).toHaveLength(1);
        // The whole kit runs directly for every driver family the adapter has, and the primary is one of them.
        expect(rows.find((row) => row.primary)?.suites).toBe('all');
        const families = rows.filter((row) => row.family !== undefined).map((row) => row.family);
        expect(new Set(families).size).toBe(families.length);
      });
    });
  }

  it('in the family lane, one row per driver family across the adapters runs the worker processes', async () => {
    const leads = new Map<string, string[]>();
    const families = new Set<string>();
    for (const adapter of adapters) {
      const { matrix } = (await import(`../../${adapter}/test/matrix.ts`)) as {
        matrix: Record<string, MatrixEntry>;
      };
      for (const [key, row] of Object.entries(matrix)) {
        if (row.family !== undefined) families.add(row.family);
        if (row.leadsFamily) {
          expect(row.family, `${adapter}: matrix.${key} leads no family`).toBeDefined();
          leads.set(row.family as string, [...(leads.get(row.family as string) ?? []), `${adapter}.${key}`]);
        }
      }
    }
    expect([...leads.keys()].sort()).toEqual([...families].sort());
    for (const [family, rows] of leads) expect(rows, family).toHaveLength(1);
  });

  it('the whole kit runs through PgBouncer at least once', async () => {
    const { matrix } = (await import('../../pg/test/matrix.ts')) as { matrix: Record<string, MatrixEntry> };
    expect(Object.values(matrix).some((row) => row.viaPgBouncer && row.suites === 'all')).toBe(true);
  });
});

describe('lanes and filters', () => {
  const harness = { name: 'pg (Pool)' } as AdapterHarness;
  const primary: MatrixEntry = { harness, suites: 'all', primary: true, family: 'node-postgres' };
  const secondary: MatrixEntry = {
    harness: { name: 'pg (Client)' } as AdapterHarness,
    suites: ['exclusion'],
  };
  const pooled: MatrixEntry = { harness, suites: 'all', viaPgBouncer: true };

  it('ci: each row its suites; fast: the primaries; family: one per driver family, never through a pooler', () => {
    expect(selectSuites(primary, {}).suites).toEqual(allSuites);
    expect(selectSuites(secondary, {}).suites).toEqual(['exclusion']);
    expect(selectSuites(secondary, { PGLOCK_LANE: 'all' }).suites).toEqual(allSuites);
    expect(selectSuites(secondary, { PGLOCK_LANE: 'fast' }).suites).toEqual([]);
    expect(selectSuites(primary, { PGLOCK_LANE: 'fast' }).suites).toEqual(allSuites);
    expect(selectSuites(pooled, { PGLOCK_LANE: 'fast' }).suites).toEqual([]);
    expect(selectSuites(pooled, { PGLOCK_LANE: 'family' }).suites).toEqual([]);
    expect(selectSuites(primary, { PGLOCK_LANE: 'family' }).suites).toEqual(allSuites);
  });

  it('PGLOCK_HARNESSES takes named rows with every suite; PGLOCK_SUITES narrows; typos are errors', () => {
    expect(entryId(pooled)).toBe('pg-pool-via-pgbouncer');
    expect(selectSuites(secondary, { PGLOCK_HARNESSES: 'pg-client' }).suites).toEqual(allSuites);
    expect(selectSuites(primary, { PGLOCK_HARNESSES: 'pg-client' }).suites).toEqual([]);
    expect(selectSuites(primary, { PGLOCK_SUITES: 'nesting, queue' }).suites).toEqual(['nesting', 'queue']);
    expect(() => selectSuites(primary, { PGLOCK_SUITES: 'nestin' })).toThrow(/names no suite "nestin"/);
    expect(() => selectSuites(primary, { PGLOCK_LANE: 'quick' })).toThrow(/not a lane/);
  });

  it('a row never runs a suite it excepts, in any lane', () => {
    const row: MatrixEntry = { harness, suites: 'all', except: { suites: ['abort'], reason: 'r' } };
    for (const lane of ['ci', 'all'])
      expect(selectSuites(row, { PGLOCK_LANE: lane }).suites).not.toContain('abort');
  });

  it('worker-process tests: on whole-kit rows in ci; on every row in the other lanes, for a named harness, or when a row asks', () => {
    expect(processesElsewhere(primary, {})).toBeUndefined();
    expect(processesElsewhere(pooled, {})).toBeUndefined();
    expect(processesElsewhere(secondary, {})?.skipped).toMatch(/whole-kit rows/);
    expect(processesElsewhere({ ...secondary, processes: true }, {})).toBeUndefined();
    for (const lane of ['all', 'fast'])
      expect(processesElsewhere(secondary, { PGLOCK_LANE: lane })).toBeUndefined();
    // The family lane: only the row that leads its driver family, whatever its suites.
    expect(processesElsewhere(primary, { PGLOCK_LANE: 'family' })?.skipped).toMatch(/leadsFamily/);
    expect(processesElsewhere({ ...primary, leadsFamily: true }, { PGLOCK_LANE: 'family' })).toBeUndefined();
    expect(processesElsewhere(secondary, { PGLOCK_HARNESSES: 'pg-client' })).toBeUndefined();
  });
});
