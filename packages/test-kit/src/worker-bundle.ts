import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

// A worker process loaded through tsx spends most of its start-up transpiling and loading the
// adapter's TypeScript sources in tsx's loader thread: about 0.8 s CPU and 0.55 s wall here, against
// 0.15 s for the same harness as one bundled ES module, and the PostgreSQL 15 lane starts hundreds.
// So each harness module is bundled once per test process (about 0.15 s), the workspace's sources
// in it (`@pglock/source`), every installed package left to Node at the path it resolved to from its
// importer (the same copy the tsx worker would load).

const mainPath = fileURLToPath(new URL('./worker-main.ts', import.meta.url));
// Named by their content, so test processes (which vitest ends without an exit event) share them and
// leave no copies behind; a file unused for a day is removed by the next run.
const outDir = join(tmpdir(), 'pglock-workers');
const built = new Map<string, Promise<string>>();
let pruned = false;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Installed packages stay imports, at the file esbuild resolved them to (Node loads that file). */
const installedPackagesByPath: Plugin = {
  name: 'pglock-installed-packages-by-path',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'pglock-inner' || args.path.startsWith('@pglock/')) return undefined;
      const resolved = await b.resolve(args.path, {
        resolveDir: args.resolveDir,
        kind: args.kind,
        importer: args.importer,
        pluginData: 'pglock-inner',
      });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      return { path: resolved.external ? args.path : resolved.path, external: true };
    });
  },
};

/**
 * The path of an ES module that runs a worker of the harness exported as `exportName` from
 * `moduleUrl` (argv: scenario, JSON args; DATABASE_URL from the environment). Built on first use in
 * this process, into a file named by its content.
 *
 * @example
 * ```ts
 * import { workerBundle } from './worker-bundle.ts';
 *
 * const entry = await workerBundle(new URL('../../pg/test/harness.ts', import.meta.url).href, 'poolHarness');
 * ```
 */
export function workerBundle(moduleUrl: string, exportName: string): Promise<string> {
  const id = `${moduleUrl}#${exportName}`;
  let path = built.get(id);
  if (path === undefined) {
    path = bundle(fileURLToPath(moduleUrl), exportName);
    built.set(id, path);
  }
  return path;
}

async function bundle(harnessPath: string, exportName: string): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  if (!pruned) {
    pruned = true;
    for (const name of readdirSync(outDir)) {
      const file = join(outDir, name);
      try {
        if (Date.now() - statSync(file).mtimeMs > DAY_MS) rmSync(file, { force: true });
      } catch {
        // another process removed it first
      }
    }
  }
  const entry = [
    `import { runWorker } from ${JSON.stringify(mainPath)};`,
    `import { ${exportName} as harness } from ${JSON.stringify(harnessPath)};`,
    'const [scenario, argsJson] = process.argv.slice(2);',
    'const url = process.env.DATABASE_URL;',
    "if (!scenario || !url) throw new Error('usage: worker <scenario> <json>, DATABASE_URL set');",
    "await runWorker(harness, url, scenario, JSON.parse(argsJson ?? '{}'));",
  ].join('\n');
  const result = await build({
    stdin: { contents: entry, resolveDir: outDir, sourcefile: 'pglock-worker-entry.ts', loader: 'ts' },
    write: false,
    outfile: join(outDir, 'worker.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    conditions: ['@pglock/source'],
    // No source map: Node would parse it at every start. PGLOCK_WORKER_LOADER=tsx gives source lines.
    logLevel: 'silent',
    // Bundled CommonJS (none is expected: installed packages stay outside) would need `require`.
    banner: {
      js: "import { createRequire as pglockCreateRequire } from 'node:module'; const require = pglockCreateRequire(import.meta.url);",
    },
    plugins: [installedPackagesByPath],
  });
  const code = result.outputFiles[0]?.contents;
  if (code === undefined) throw new Error(`esbuild wrote no worker for ${harnessPath}`);
  const outfile = join(outDir, `${createHash('sha256').update(code).digest('hex').slice(0, 20)}.mjs`);
  if (existsSync(outfile)) {
    // Used again: not a day-old file for the next run's pruning.
    const now = new Date();
    utimesSync(outfile, now, now);
  } else {
    // Written aside and renamed: a process starting the same bundle never reads half a file.
    const partial = `${outfile}.${process.pid}.${randomUUID().slice(0, 8)}`;
    writeFileSync(partial, code);
    renameSync(partial, outfile);
  }
  return outfile;
}
