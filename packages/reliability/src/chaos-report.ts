import type { ChaosCrash, ChaosResult } from './chaos.ts';

/**
 * Crashes that are not a known upstream driver bug: each one fails a run.
 *
 * @example
 * ```ts
 * if (unexpectedCrashes(result).length > 0) process.exitCode = 1;
 * ```
 */
export function unexpectedCrashes(result: ChaosResult): readonly ChaosCrash[] {
  return result.crashes.filter((crash) => crash.knownBug === undefined);
}

/**
 * The counts of a chaos run as printable lines, violations and crashes listed after.
 *
 * @example
 * ```ts
 * console.log(formatChaos(await runChaos({ url, seconds: 20 })));
 * ```
 */
export function formatChaos(result: ChaosResult): string {
  const lines = [
    `sections ${result.sections} (exclusive ${result.exclusive}, shared ${result.shared}) in ${result.seconds} s`,
    `kills ${result.kills}, terminations ${result.terminations}`,
    `tries busy ${result.busy}, waits timed out ${result.timedOut}, calls failed by the faults ${result.errors}`,
    `per adapter: ${Object.entries(result.byAdapter)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}`,
    `violations ${result.violations.length}, hung ${result.hung}, crashed ${result.crashes.length} (unexpected ${unexpectedCrashes(result).length})`,
  ];
  if (result.hung > 0) lines.push(`  HUNG ${result.hungAdapters.join(', ')}`);
  for (const violation of result.violations.slice(0, 20)) {
    lines.push(`  VIOLATION ${violation.kind} on ${violation.key}: ${violation.detail}`);
  }
  const known = new Map<string, number>();
  for (const crash of result.crashes) {
    if (crash.knownBug)
      known.set(
        `${crash.adapter}: ${crash.knownBug}`,
        (known.get(`${crash.adapter}: ${crash.knownBug}`) ?? 0) + 1,
      );
  }
  for (const [bug, n] of known) lines.push(`  known driver crash ×${n} ${bug}`);
  for (const crash of unexpectedCrashes(result).slice(0, 5))
    lines.push(`  CRASH ${crash.adapter}: ${crash.stderr}`);
  return lines.join('\n');
}
