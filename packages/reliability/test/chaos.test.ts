import { expect, inject, it } from 'vitest';
import { runChaos } from '../src/chaos.ts';
import { formatChaos, unexpectedCrashes, unexpectedHangs } from '../src/chaos-report.ts';

// The bounded CI run of `pnpm chaos`: every adapter in worker processes, SIGKILLs and backend
// terminations for CHAOS_SECONDS (default 20 s), then the history check.
const seconds = Number(process.env.CHAOS_SECONDS ?? 20);

it(`chaos: ${seconds} s of kills and terminations across every adapter leave a valid history`, {
  timeout: 240_000,
}, async () => {
  const result = await runChaos({ url: inject('databaseUrl'), seconds, processes: 6 });
  console.log(formatChaos(result));
  expect(result.violations).toEqual([]);
  expect(unexpectedHangs(result)).toEqual([]);
  expect(unexpectedCrashes(result)).toEqual([]);
  // The run must have done something worth checking, under faults that really happened.
  expect(result.exclusive).toBeGreaterThan(20);
  expect(result.shared).toBeGreaterThan(0);
  expect(result.kills + result.terminations).toBeGreaterThanOrEqual(seconds / 2);
  for (const [adapter, sections] of Object.entries(result.byAdapter))
    expect(sections, adapter).toBeGreaterThan(0);
});
