// Sums vitest JSON reports (numPassedTests / numFailedTests) into the one line CI reads.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
let passed = 0;
let failed = 0;
let skipped = 0;
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
for (const file of files) {
  const report = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests + (report.numFailedTestSuites ?? 0);
  skipped += report.numPendingTests + (report.numTodoTests ?? 0);
  console.log(
    `[${file}] passed ${report.numPassedTests}, failed ${report.numFailedTests}, skipped ${report.numPendingTests}`,
  );
}
if (files.length === 0) failed += 1;
console.log(`skipped (each with a printed reason): ${skipped}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
