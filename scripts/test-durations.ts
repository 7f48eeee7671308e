// Writes one lane's figures into packages/test-kit/test-durations.json (seconds per test file, the
// order packages/test-kit/src/longest-first-sequencer.ts starts files in) from vitest JSON reports
// of that lane's runs: the longest of each file's durations across the reports given.
// Usage: pnpm test:durations -- [--lane ci|fast|family|all] <report.json>…
//   (PGLOCK_TEST_REPORT=<path> pnpm test writes a report; CI's log names its reports)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { currentLane } from '../packages/test-kit/src/lanes.ts';

const args = process.argv.slice(2).filter((arg) => arg !== '--');
const at = args.indexOf('--lane');
const lane = currentLane({ PGLOCK_LANE: at === -1 ? 'ci' : args[at + 1] });
const reports = at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)];
if (reports.length === 0) {
  console.error('usage: pnpm test:durations -- [--lane ci|fast|family|all] <vitest JSON report>…');
  process.exit(2);
}
const root = new URL('..', import.meta.url).pathname;
const files: Record<string, number> = {};
for (const report of reports) {
  const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as {
    testResults: { name: string; startTime: number; endTime: number }[];
  };
  for (const { name, startTime, endTime } of testResults) {
    // A report from another checkout (CI's clean clone) names its own root: keep the path below packages/ or examples/.
    const path = relative(root, name).replace(/^.*?(?=(packages|examples)\/)/, '');
    const seconds = Math.round((endTime - startTime) / 1000);
    if (seconds > 0) files[path] = Math.max(files[path] ?? 0, seconds);
  }
}
const sorted = Object.fromEntries(Object.entries(files).sort(([, a], [, b]) => b - a));
const target = new URL('../packages/test-kit/test-durations.json', import.meta.url);
const previous = existsSync(target) ? JSON.parse(readFileSync(target, 'utf8')) : {};
const about =
  'seconds per test file in each lane, longest first: pnpm test:durations -- --lane <lane> <report.json>';
writeFileSync(
  target,
  `${JSON.stringify({ about, lanes: { ...previous.lanes, [lane]: sorted } }, null, 2)}\n`,
);
console.log(`${lane}: ${Object.keys(sorted).length} files → ${relative(root, target.pathname)}`);
