// `pnpm pack:release [-- --out DIR]`: installable tarballs of the published packages, until they are on
// the registry. Builds them first (a bare `pnpm -r pack` on a fresh clone packs no dist/), packs only
// the packages that are not private into one folder (default `tarballs/`, gitignored; its old
// tarballs are removed first), checks that each tarball has its dist/ and no `workspace:` range,
// and prints the paths and the `npm install` line for each adapter.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { publishedPackages } from './packages.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { out: { type: 'string' } },
});
// A relative --out is relative to where pnpm was started (INIT_CWD), not to the workspace root.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by pnpm for this script, not a turbo task's input
const startedIn = process.env.INIT_CWD ?? process.cwd();
const out = resolve(startedIn, values.out ?? join(root, 'tarballs'));

interface WorkspacePackage {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly path: string;
}
const pnpm = (args: readonly string[], cwd = root): string =>
  execFileSync('pnpm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

const all = JSON.parse(pnpm(['ls', '-r', '--depth', '-1', '--json'])) as WorkspacePackage[];
const published = all.filter((p) => p.path !== root.replace(/\/$/, '') && p.private !== true);
if (published.length === 0) throw new Error('no public package in the workspace');

console.log(`building ${published.map((p) => p.name).join(', ')}`);
const filters = published.map((p) => `--filter=${p.name}`);
execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', ...filters, '--output-logs=errors-only'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
});

mkdirSync(out, { recursive: true });
for (const file of readdirSync(out)) if (file.endsWith('.tgz')) rmSync(join(out, file));

const tarballs = new Map<string, string>();
for (const pkg of published) {
  const packed = JSON.parse(pnpm(['pack', '--json', '--pack-destination', out], pkg.path)) as {
    readonly filename: string;
    readonly files: readonly { readonly path: string }[];
  };
  const files = packed.files.map((f) => f.path);
  if (!files.some((f) => f.startsWith('dist/'))) {
    throw new Error(`${pkg.name}: the tarball has no dist/ (did the build fail?): ${files.join(', ')}`);
  }
  // pnpm gives the path it wrote; older versions gave the bare file name.
  const file = resolve(out, packed.filename);
  const manifest = execFileSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' });
  if (manifest.includes('workspace:')) throw new Error(`${pkg.name}: a workspace: range was packed`);
  tarballs.set(pkg.name, file);
}

const shown = (file: string) => {
  const path = relative(startedIn, file);
  return path.startsWith('..') ? file : `./${path}`;
};
console.log(`\n${tarballs.size} tarballs in ${out}:`);
for (const file of tarballs.values()) console.log(`  ${shown(file)}`);

// What each package needs installed beside core, from its manifest: the other pglock packages it
// depends on (no registry has them yet either) and its required peers (its driver or ORM).
const core = tarballs.get('@pglock/core');
console.log('\nInstall in your app (core, plus the adapter you use and its driver or ORM):');
for (const { name, manifest } of publishedPackages()) {
  const file = tarballs.get(name);
  if (file === undefined || name === '@pglock/core') continue;
  const optional = manifest.peerDependenciesMeta ?? {};
  const peers = Object.keys(manifest.peerDependencies ?? {}).filter(
    (peer) => !peer.startsWith('@pglock/') && optional[peer]?.optional !== true,
  );
  const needs = Object.keys(manifest.dependencies ?? {})
    .filter((dep) => dep.startsWith('@pglock/') && dep !== '@pglock/core')
    .map((dep) => tarballs.get(dep));
  const files = [core, ...needs, file].filter((f): f is string => f !== undefined);
  console.log(`  npm install ${[...files, ...peers].join(' ')}`);
}
