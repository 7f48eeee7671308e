import { existsSync, readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { currentLane } from './packages/test-kit/src/lanes.ts';
import { LongestFirstSequencer } from './packages/test-kit/src/longest-first-sequencer.ts';

// CI sets PGLOCK_TEST_REPORT to a file path to get a JSON report beside the usual output (`pnpm test`
// stays the one test command; pnpm would take a `--reporter` flag for itself).
const report = process.env.PGLOCK_TEST_REPORT;

// Which packages a lane runs (packages/test-kit/src/lanes.ts says what each lane is for). The
// reliability package (multi-process chaos, restarts, network cuts) and the examples run in the `ci`
// and `all` lanes: they do not change with the server version, and the fast lane is for a contributor's
// loop before a commit.
const lane = currentLane();
const folders = (root: string) =>
  readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(`${root}/${entry.name}/vitest.config.ts`))
    .map((entry) => `${root}/${entry.name}`);
const everything = [...folders('packages'), ...folders('examples')];
// PGLOCK_EXAMPLES=0 leaves the examples out where CI runs them as a user gets them (.ci/extra-examples.sh).
const examples = lane === 'ci' || lane === 'all' ? process.env.PGLOCK_EXAMPLES !== '0' : false;
const projects = everything.filter(
  (folder) =>
    (examples || !folder.startsWith('examples/')) &&
    (lane === 'ci' || lane === 'all' || folder !== 'packages/reliability'),
);

// Test files of the database suites spend most of their time waiting on the server (locks held,
// timeouts running out), so more than one file runs at once; PGLOCK_TEST_WORKERS overrides it. The
// fast lane is five files, one per adapter, so it runs all five at once (3 m 50 s against 4 m 45 s
// with three, at load 4–9 on 2 cores, 0 failures); the other lanes keep three, which leaves the
// chaos and multi-process suites the CPU their margins were measured with.
const workers = Number(process.env.PGLOCK_TEST_WORKERS ?? (lane === 'fast' ? 5 : 3));

// One run over every package: the global setup starts PostgreSQL once (or uses DATABASE_URL) and
// hands the URL to every project through `provide`/`inject('databaseUrl')`.
export default defineConfig({
  test: {
    projects,
    maxWorkers: workers,
    // Longest files first, across projects (vitest's order groups a project's files, by name).
    sequence: { sequencer: LongestFirstSequencer },
    globalSetup: ['./packages/test-kit/src/global-setup.ts'],
    reporters: report ? ['default', ['json', { outputFile: report }]] : ['default'],
  },
});
