// Vitest's own order puts the test files of one project together, projects by name, and a clean
// clone has no cache of durations: CI's `pnpm test` started the longest conformance files (Kysely,
// postgres.js, Prisma: 100–170 s each) late, and on the PostgreSQL 18 lane, whose three longest
// files are Prisma, postgres.js and pg, the last started 163 s in and ended the run alone (283 s;
// 267 s in this order). The PostgreSQL 15 lane is CPU-bound either way (about 630 s in both). This
// order starts the longest files first, whatever their project, from the durations a run measured
// in each lane (test-durations.json in this package, written by `pnpm test:durations`).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { currentLane, type Lane } from './lanes.ts';

const durationsFile = new URL('../test-durations.json', import.meta.url);

/**
 * Seconds per test file (a path from the repository's root) in a lane's run, as `pnpm
 * test:durations` wrote them: a lane without figures of its own takes the `ci` lane's (the files'
 * sizes relative to each other are what matters).
 */
export function expectedDurations(lane: Lane = currentLane()): ReadonlyMap<string, number> {
  try {
    const parsed = JSON.parse(readFileSync(durationsFile, 'utf8')) as {
      lanes?: Partial<Record<Lane, Record<string, number>>>;
    };
    return new Map(Object.entries(parsed.lanes?.[lane] ?? parsed.lanes?.ci ?? {}));
  } catch {
    // No file (a fork that removed it): vitest's order, as before.
    return new Map();
  }
}

/**
 * Runs the test files longest first across every project (the greedy order that keeps every worker
 * busy to the end), by the durations in `test-durations.json`; vitest's cached duration of a file
 * the list does not name, then vitest's own order, decide the rest.
 *
 * @example
 * ```ts
 * import { defineConfig } from 'vitest/config';
 * import { LongestFirstSequencer } from './packages/test-kit/src/longest-first-sequencer.ts';
 *
 * export default defineConfig({ test: { sequence: { sequencer: LongestFirstSequencer } } });
 * ```
 */
export class LongestFirstSequencer extends BaseSequencer {
  readonly #expected = expectedDurations();

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification): number => {
      const path = relative(root, spec.moduleId);
      const expected = this.#expected.get(path);
      if (expected !== undefined) return expected;
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${path}`);
      return cached === undefined ? 0 : cached.duration / 1000;
    };
    return base
      .map((spec, index) => ({ spec, index, seconds: seconds(spec) }))
      .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
