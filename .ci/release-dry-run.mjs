// The release path of docs/releasing.md, rehearsed on a throwaway copy of the checkout: `changeset
// version` (versions, CHANGELOG.md files), the build, `pnpm -r publish --dry-run` and the packed
// manifests; with PGLOCK_RELEASE_REGISTRY (a registry on this machine, which extra-release.sh starts)
// also `changeset publish` to it and an `npm install` from it. Nothing reaches npmjs, and the checkout
// is not modified (the last check proves it).
// Usage: node .ci/release-dry-run.mjs <report.json>; `bash .ci/extra-release.sh` runs it in CI.
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const reportFile = process.argv[2];
if (!reportFile) throw new Error('usage: node .ci/release-dry-run.mjs <report.json>');
const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'pglock-release-'));
const copy = join(work, 'repo');
const started = performance.now();
const run = (command, args, cwd = copy) =>
  execFileSync(command, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    // pnpm would otherwise install before `pnpm run` (turbo's too) when the versions changed.
    env: {
      ...process.env,
      TURBO_TELEMETRY_DISABLED: '1',
      CI: 'true',
      pnpm_config_verify_deps_before_run: 'false',
    },
    maxBuffer: 64 * 1024 * 1024,
  });
const results = [];
// check(name, fn): one test of the report; fn throws to fail, and its message is printed.
function check(name, fn) {
  const t0 = performance.now();
  try {
    fn();
    results.push({ fullName: name, status: 'passed' });
    console.log(`  ok    ${name} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (error) {
    const message = String(error?.stderr || error?.message || error).slice(0, 2000);
    results.push({ fullName: name, status: 'failed', failureMessages: [message] });
    console.log(`  FAIL  ${name}\n${message.replace(/^/gm, '        ')}`);
  }
}
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const fail = (message) => {
  throw new Error(message);
};

const statusBefore = run('git', ['status', '--porcelain', '--untracked-files=all'], root);
// pnpm's record of the checkout's install: a pnpm command run in the copy must not rewrite it.
const installState = () =>
  ['node_modules/.modules.yaml', 'node_modules/.pnpm-workspace-state-v1.json', 'node_modules/.pnpm/lock.yaml']
    .map((file) => (existsSync(join(root, file)) ? readFileSync(join(root, file), 'utf8') : ''))
    .join('\0');
const installBefore = installState();
// The work tree as it is (tracked files and new ones not ignored), without node_modules or builds.
const files = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root)
  .split('\0')
  .filter((file) => file !== '' && existsSync(join(root, file)));
mkdirSync(copy, { recursive: true });
execFileSync('sh', ['-c', `tar --null -T - -c | tar -x -C '${copy}'`], {
  cwd: root,
  input: files.join('\0'),
});
// The copy reuses the checkout's installed dependencies instead of installing its own: in each
// node_modules, a link per dependency (a workspace package links to the copy's: pnpm packs
// `workspace:^` as the version it finds there), .bin copied, and pnpm's state files left out, so that
// whatever pnpm or a build tool writes lands in the copy. pnpm's install-before-run is off too.
const workspaces = JSON.parse(run('pnpm', ['ls', '-r', '--depth', '-1', '--json'], root)).filter(
  (p) => p.path !== root.replace(/\/$/, ''),
);
const inCopy = (path) => join(copy, path.slice(root.length));
const linkModules = (from, to) => {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from)) {
    const source = join(from, entry);
    if (entry === '.bin') cpSync(source, join(to, entry), { recursive: true, verbatimSymlinks: true });
    else if (entry.startsWith('.')) continue;
    else if (entry.startsWith('@') && !lstatSync(source).isSymbolicLink())
      linkModules(source, join(to, entry));
    else {
      const real = realpathSync(source);
      const workspace = real.startsWith(root) && !real.includes('/node_modules/');
      symlinkSync(workspace ? inCopy(real) : real, join(to, entry));
    }
  }
};
linkModules(join(root, 'node_modules'), join(copy, 'node_modules'));
for (const p of workspaces) {
  const modules = join(p.path, 'node_modules');
  if (existsSync(modules)) linkModules(modules, inCopy(modules));
}
const dirOf = (p) => inCopy(p.path);
const published = workspaces.filter((p) => !p.private);
const privates = workspaces.filter((p) => p.private);
const pending = readdirSync(join(copy, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
const bumps = pending.flatMap((file) => {
  const front = /^---\n([\s\S]*?)\n---/.exec(readFileSync(join(copy, '.changeset', file), 'utf8'))?.[1] ?? '';
  return [...front.matchAll(/^["']?([^"':]+)["']?:\s*(major|minor|patch)\s*$/gm)].map((m) => m[2]);
});
console.log(
  `release dry run on a copy in ${copy}: ${published.length} public packages, ${pending.length} changesets`,
);

let next;
check('changeset version applies the pending changesets on the copy', () => {
  if (pending.length === 0) fail('no pending changeset: nothing to release');
  run(join(root, 'node_modules/.bin/changeset'), ['version']);
});
check(
  'the public packages share one new version, bumped as the changesets say (no major unless one says major)',
  () => {
    const versions = new Set(published.map((p) => readJson(join(dirOf(p), 'package.json')).version));
    if (versions.size !== 1) fail(`the fixed group split: ${[...versions].join(', ')}`);
    next = [...versions][0];
    const old = published[0].version;
    const [oMajor, oMinor] = old.split('.').map(Number);
    const [nMajor, nMinor, nPatch] = next.split('.').map(Number);
    const kind = nMajor > oMajor ? 'major' : nMinor > oMinor ? 'minor' : nPatch > 0 ? 'patch' : 'none';
    const wanted = ['major', 'minor', 'patch'].find((k) => bumps.includes(k));
    if (kind !== wanted) fail(`${old} → ${next} is a ${kind} bump; the changesets ask for ${wanted}`);
    console.log(`        ${old} → ${next}`);
  },
);
check('private packages keep their versions', () => {
  for (const p of privates) {
    const now = readJson(join(dirOf(p), 'package.json')).version;
    if (now !== p.version) fail(`${p.name} went from ${p.version} to ${now}`);
  }
});
check('every public package has a generated CHANGELOG.md with a section for the new version', () => {
  for (const p of published) {
    const file = join(dirOf(p), 'CHANGELOG.md');
    if (!existsSync(file)) fail(`${p.name}: no CHANGELOG.md`);
    const text = readFileSync(file, 'utf8');
    if (!text.startsWith(`# ${p.name}\n`) || !text.includes(`\n## ${next}\n`)) {
      fail(`${p.name}: CHANGELOG.md has no "## ${next}" section`);
    }
  }
});
check('the changesets are consumed', () => {
  const left = readdirSync(join(copy, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
  if (left.length > 0) fail(`still pending: ${left.join(', ')}`);
});
check('the packages build at the new version', () => {
  run(join(copy, 'node_modules/.bin/turbo'), [
    'run',
    'build',
    ...published.map((p) => `--filter=${p.name}`),
    '--output-logs=errors-only',
  ]);
});
let dryRun = [];
check('pnpm -r publish --dry-run selects exactly the public packages, at the new version', () => {
  dryRun = JSON.parse(run('pnpm', ['-r', 'publish', '--dry-run', '--no-git-checks', '--json']));
  const got = dryRun.map((p) => `${p.name}@${p.version}`).sort();
  const want = published.map((p) => `${p.name}@${next}`).sort();
  if (got.join() !== want.join()) fail(`would publish ${got.join(', ')}; expected ${want.join(', ')}`);
});
check(
  'each tarball has its dist/, README.md and LICENSE, and a manifest without workspace: or @pglock/source',
  () => {
    const tarballs = join(work, 'tarballs');
    for (const p of published) {
      const packed = JSON.parse(run('pnpm', ['pack', '--json', '--pack-destination', tarballs], dirOf(p)));
      const paths = packed.files.map((f) => f.path);
      for (const needed of ['dist/index.mjs', 'dist/index.cjs', 'dist/index.d.mts', 'dist/index.d.cts']) {
        if (!paths.includes(needed)) fail(`${p.name}: no ${needed} in the tarball`);
      }
      for (const needed of ['README.md', 'LICENSE', 'package.json']) {
        if (!paths.includes(needed)) fail(`${p.name}: no ${needed} in the tarball`);
      }
      if (paths.some((f) => f.startsWith('src/') || f.startsWith('test/')))
        fail(`${p.name}: packs src/ or test/`);
      const tgz = packed.filename.startsWith('/') ? packed.filename : join(tarballs, packed.filename);
      const manifest = JSON.parse(run('tar', ['-xzOf', tgz, 'package/package.json'], work));
      const text = JSON.stringify(manifest);
      if (manifest.version !== next) fail(`${p.name}: packed version ${manifest.version}`);
      if (text.includes('workspace:')) fail(`${p.name}: a workspace: range was packed`);
      if (text.includes('@pglock/source')) fail(`${p.name}: the @pglock/source condition was packed`);
      for (const field of ['dependencies', 'peerDependencies']) {
        for (const [name, range] of Object.entries(manifest[field] ?? {})) {
          if (name.startsWith('@pglock/') && range !== `^${next}`)
            fail(`${p.name}: ${field} ${name}@${range}`);
        }
      }
    }
  },
);
// With a throwaway registry (extra-release.sh starts a Verdaccio on 127.0.0.1), the publish itself:
// `changeset publish` as `pnpm release` runs it, then the README's install commands against it.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by extra-release.sh for this script, not a turbo task's input
const registry = process.env.PGLOCK_RELEASE_REGISTRY;
if (registry !== undefined) {
  const host = new URL(registry).host;
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(registry).hostname)) {
    throw new Error(`PGLOCK_RELEASE_REGISTRY must be on this machine, not ${host}`);
  }
  // pnpm 12 reads the registry from .npmrc only (it ignores npm_config_registry); changesets' `npm
  // info` reads npm_config_registry. Both point at the throwaway registry, nothing at npmjs.
  const npmrc = `registry=${registry}\n//${host}/:_authToken=rehearsal\n`;
  writeFileSync(join(copy, '.npmrc'), npmrc);
  writeFileSync(join(work, 'npmrc'), npmrc);
  const registryEnv = {
    ...process.env,
    npm_config_registry: registry,
    npm_config_userconfig: join(work, 'npmrc'),
    npm_config_cache: join(work, 'npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    pnpm_config_verify_deps_before_run: 'false',
  };
  const inRegistry = (command, args, cwd) =>
    execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: registryEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
  check('changeset publish publishes the group to a local registry and tags each package', () => {
    const git = (...args) =>
      inRegistry('git', ['-c', 'user.name=rehearsal', '-c', 'user.email=rehearsal@127.0.0.1', ...args], copy);
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'Version packages (rehearsal)');
    inRegistry(join(root, 'node_modules/.bin/changeset'), ['publish'], copy);
    for (const p of published) {
      const got = inRegistry('npm', ['view', `${p.name}@${next}`, 'version'], work).trim();
      if (got !== next) fail(`${p.name}@${next} is not on the registry (${got || 'nothing'})`);
    }
    const tags = git('tag', '-l').split('\n').filter(Boolean).sort();
    const want = published.map((p) => `${p.name}@${next}`).sort();
    if (tags.join() !== want.join()) fail(`tags ${tags.join(', ')}; expected ${want.join(', ')}`);
  });
  check("the README's npm install commands install the published packages", () => {
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), '{"name":"app","version":"0.0.0","private":true}\n');
    inRegistry(
      'npm',
      ['install', '--loglevel=error', '@pglock/pg', '@pglock/core', '@pglock/cli', 'pg'],
      app,
    );
    const probe = [
      "const { advisoryLocks, lockKey } = require('@pglock/pg');",
      "if (typeof advisoryLocks !== 'function') throw new Error('no advisoryLocks');",
      "console.log(require('@pglock/pg/package.json').version, String(lockKey('leaderboard').value));",
    ].join('\n');
    const out = inRegistry('node', ['-e', probe], app).trim();
    if (out !== `${next} 7676066025365312217`) fail(`require('@pglock/pg') printed ${out}`);
    const cli = inRegistry('npx', ['--no-install', 'pglock', '--version'], app).trim();
    if (cli !== next) fail(`pglock --version printed ${cli}`);
  });
}
check('the checkout is not modified', () => {
  const after = run('git', ['status', '--porcelain', '--untracked-files=all'], root);
  if (after !== statusBefore) fail(`git status changed:\n${after}`);
  if (installState() !== installBefore) fail("pnpm's state of the checkout's node_modules changed");
});

rmSync(work, { recursive: true, force: true });
const passed = results.filter((r) => r.status === 'passed').length;
const failed = results.length - passed;
writeFileSync(
  reportFile,
  `${JSON.stringify({
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: 0,
    testResults: [
      {
        name: 'release dry run',
        status: failed === 0 ? 'passed' : 'failed',
        assertionResults: results,
      },
    ],
  })}\n`,
);
console.log(
  `release dry run: ${passed} passed, ${failed} failed in ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
process.exitCode = failed === 0 ? 0 : 1;
