import { readFileSync } from 'node:fs';
import * as core from '@pglock/core';
import { describe, expect, it } from 'vitest';
import type { SuiteContext } from '../context.ts';
import { documentedExports, EXPORTS_BEGIN, EXPORTS_END, scheduledExports } from '../documented-exports.ts';

const coreExports = new Set(Object.keys(core));

/**
 * Issue 23 item 11: the package exports what its README says (the marked list, in both directions)
 * and what docs/scheduling.md says every adapter exports; the client methods (Prisma's extension)
 * are the README's `$` names. A dropped or renamed export fails here, and so does an undocumented one.
 */
export function exportsSuite(ctx: SuiteContext): void {
  const pkg = ctx.harness.package;
  const noPackage = pkg === undefined ? 'the harness names no package (AdapterHarness.package)' : undefined;

  describe.skipIf(noPackage)(`exports${noPackage ? ` (skipped: ${noPackage})` : ''}`, () => {
    if (pkg === undefined) return;
    const readme = readFileSync(pkg.readme, 'utf8');
    const runtime = Object.keys(pkg.exports);
    const own = runtime.filter((name) => !coreExports.has(name));
    const methods = pkg.clientMethods ?? [];

    it(`${pkg.name} exports every name its README documents (${EXPORTS_BEGIN} … ${EXPORTS_END})`, () => {
      const documented = documentedExports(readme);
      const missing = documented.filter((name) =>
        name.startsWith('$') ? !methods.includes(name) : !runtime.includes(name),
      );
      expect(missing, `documented in ${pkg.name}'s README, not exported`).toEqual([]);
      const undocumented = [...own, ...methods].filter((name) => !documented.includes(name));
      expect(undocumented, `exported by ${pkg.name}, not in its README's list`).toEqual([]);
    });

    it(`${pkg.name} exports what docs/scheduling.md says it does`, () => {
      const claimed = scheduledExports(pkg.name);
      expect(claimed.length).toBeGreaterThan(0);
      const missing = claimed.filter((name) =>
        name.startsWith('$') ? !methods.includes(name) : typeof pkg.exports[name] !== 'function',
      );
      expect(missing, `docs/scheduling.md says ${pkg.name} exports these`).toEqual([]);
    });

    it(`${pkg.name} re-exports all of @pglock/core`, () => {
      expect([...coreExports].filter((name) => !runtime.includes(name))).toEqual([]);
    });
  });
}
