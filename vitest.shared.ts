import type { UserWorkspaceConfig } from 'vitest/config';
import { currentLane } from './packages/test-kit/src/lanes.ts';

/**
 * Settings every package's vitest project shares: tests import workspace packages through the
 * `@pglock/source` export condition, so they run on `src/` with no build step. The condition's name is
 * private to this repository: a consumer's `customConditions` never selects the `.ts` files.
 *
 * The type tests (`*.test-d.ts`) run in the `ci` and `all` lanes only: types do not change with the
 * server version or the lane's harnesses, and `pnpm typecheck` checks the same files.
 */
export function sharedProject(name: string): UserWorkspaceConfig {
  const lane = currentLane();
  return {
    resolve: { conditions: ['@pglock/source'] },
    ssr: { resolve: { conditions: ['@pglock/source'] } },
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      typecheck: {
        enabled: lane === 'ci' || lane === 'all',
        include: ['test/**/*.test-d.ts', 'src/**/*.test-d.ts'],
      },
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  };
}
