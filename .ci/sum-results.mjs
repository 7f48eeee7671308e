// Sums vitest JSON reports (numPassedTests / numFailedTests) into the one line CI reads.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
/** The first failure message without its stack and colours, on one line, cut at 400 characters. */
function why(messages) {
  const text = String((messages ?? [])[0] ?? 'no message')
    .split(/\n\s+at /)[0]
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape that starts a colour code
    .replace(/\u001b\[[0-9;]*m/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > 400 ? `${text.slice(0, 400)}…` : text;
}
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
for (const file of files) {
  const report = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  passed += report.numPassedTests;
  // A file that failed without a failed test (an import error, a hook) counts once; a file whose tests
  // failed is already counted by them.
  const failedTests = (result) => (result.assertionResults ?? []).filter((t) => t.status === 'failed');
  const broken = (report.testResults ?? []).filter(
    (r) => r.status === 'failed' && failedTests(r).length === 0,
  );
  failed += report.numFailedTests + broken.length;
  // The names of what failed and the start of why, so the tail of a CI log (often all of it that is
  // kept) says which test to look at and what it saw.
  for (const result of report.testResults ?? []) {
    for (const t of failedTests(result)) failures.push(`${file}: ${t.fullName}\n  ${why(t.failureMessages)}`);
  }
  for (const r of broken) failures.push(`${file}: ${r.name}: ${String(r.message ?? '').slice(0, 300)}`);
  // A count the named failures do not explain still gets a line (a CI run once summed 2 failed with 1 named).
  const named = (report.testResults ?? []).reduce((n, r) => n + failedTests(r).length, 0);
  if (report.numFailedTests > named) {
    failures.push(
      `${file}: ${report.numFailedTests - named} failed test(s) not named in the report's testResults`,
    );
  }
  skipped += report.numPendingTests + (report.numTodoTests ?? 0);
  console.log(
    `[${file}] passed ${report.numPassedTests}, failed ${report.numFailedTests}, skipped ${report.numPendingTests}`,
  );
}
if (files.length === 0) failed += 1;
for (const line of failures) console.log(`FAILED ${line}`);
console.log(`skipped (each with a printed reason): ${skipped}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
