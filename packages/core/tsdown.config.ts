import { defineConfig } from 'tsdown';

export default defineConfig({
  // Named entries keep each driver's room at its own path in dist (`dist/drivers/node-postgres.mjs`).
  entry: {
    index: 'src/index.ts',
    adapter: 'src/adapter.ts',
    internal: 'src/internal.ts',
    'drivers/node-postgres': 'src/drivers/node-postgres.ts',
    'drivers/postgres-js': 'src/drivers/postgres-js.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  platform: 'node',
  target: 'node20',
});
