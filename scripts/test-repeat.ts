// Runs one part of the tests N times in a row, each a fresh `vitest run`, and stops at the first
// failing run: the proof that a test is not flaky. Everything but `--times N` goes to vitest as is
// (a file filter, `-t <name pattern>`, `--project <name>`), and the lane variables apply as usual.
// Usage: pnpm test:repeat -- packages/reliability/test/chaos.test.ts --times 20
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

const args = process.argv.slice(2).filter((arg) => arg !== '--');
const at = args.indexOf('--times');
const times = at === -1 ? 10 : Number(args[at + 1]);
if (!Number.isInteger(times) || times < 1) {
  console.error('usage: pnpm test:repeat -- <vitest filters…> --times N (N a whole number ≥ 1)');
  process.exit(2);
}
const filters = at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)];
if (filters.length === 0) {
  console.error('name what to repeat (a file filter or -t <pattern>): repeating everything is `pnpm test`');
  process.exit(2);
}

const started = performance.now();
for (let run = 1; run <= times; run++) {
  const t0 = performance.now();
  const result = spawnSync('pnpm', ['exec', 'vitest', 'run', ...filters], { stdio: 'inherit' });
  const took = ((performance.now() - t0) / 1000).toFixed(1);
  const load = loadavg()[0]!.toFixed(1);
  if (result.status !== 0) {
    console.log(
      `test:repeat: run ${run} of ${times} FAILED after ${took} s (load ${load}); ${run - 1} passed before it`,
    );
    process.exit(1);
  }
  console.log(`test:repeat: run ${run} of ${times} passed in ${took} s (load ${load})`);
}
const total = ((performance.now() - started) / 1000).toFixed(0);
console.log(`test:repeat: ${times} of ${times} runs passed in ${total} s: ${filters.join(' ')}`);
