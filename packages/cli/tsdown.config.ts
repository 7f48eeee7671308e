import { defineConfig } from 'tsdown';

const shared = { dts: true, platform: 'node', target: 'node20' } as const;

export default defineConfig([
  // The binary shares its chunks with the ESM library; it awaits at the top level, so it has no CJS build.
  { ...shared, entry: ['src/index.ts', 'src/cli.ts'], format: 'esm' },
  { ...shared, entry: ['src/index.ts'], format: 'cjs' },
]);
