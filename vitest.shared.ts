import type { UserWorkspaceConfig } from 'vitest/config';

/**
 * Settings every package's vitest project shares: tests import workspace packages through the
 * `source` export condition, so they run on `src/` with no build step.
 */
export function sharedProject(name: string): UserWorkspaceConfig {
  return {
    resolve: { conditions: ['source'] },
    ssr: { resolve: { conditions: ['source'] } },
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      typecheck: { enabled: true, include: ['test/**/*.test-d.ts', 'src/**/*.test-d.ts'] },
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  };
}
