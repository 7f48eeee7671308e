import type { UserWorkspaceConfig } from 'vitest/config';

/**
 * Settings every package's vitest project shares: tests import workspace packages through the
 * `@pglock/source` export condition, so they run on `src/` with no build step. The condition's name is
 * private to this repository: a consumer's `customConditions` never selects the `.ts` files.
 */
export function sharedProject(name: string): UserWorkspaceConfig {
  return {
    resolve: { conditions: ['@pglock/source'] },
    ssr: { resolve: { conditions: ['@pglock/source'] } },
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      typecheck: { enabled: true, include: ['test/**/*.test-d.ts', 'src/**/*.test-d.ts'] },
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  };
}
