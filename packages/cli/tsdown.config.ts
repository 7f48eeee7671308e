import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts'],
  format: 'esm',
  dts: true,
  platform: 'node',
  target: 'node20',
  // Only the binary gets the shebang; the library entry stays a plain module.
  banner: (chunk) => (chunk.fileName.startsWith('cli.') ? '#!/usr/bin/env node' : ''),
});
