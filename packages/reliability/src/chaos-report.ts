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
 * Hung workers pglock is answerable for. A postgres.js worker whose backend was terminated can stay
 * pending forever in the driver (a query queued on a connection whose socket is gone never settles:
 * porsager/postgres #1208, the same root cause as the known crash above), so those hangs are reported
 * but do not fail the run; a hang on any other driver does.
 *
 * @example
 * ```ts
 * if (unexpectedHangs(result).length > 0) process.exitCode = 1;
 * ```
 */
export function unexpectedHangs(result: ChaosResult): readonly string[] {
  return result.hungAdapters.filter((hang) => !/postgres-js/.test(hang));
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
  if (result.hung > 0) {
    lines.push(
      `  HUNG ${result.hungAdapters.join(', ')} (unexpected ${unexpectedHangs(result).length}; postgres.js hangs: porsager/postgres #1208)`,
    );
  }
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
