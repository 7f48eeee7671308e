import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../src/index.ts';

const cliPath = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

/** A `pglock` process started from source, as the binary would run. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Exit code, or 128+n when killed by a signal (as a shell reports it). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `pglock …args` with `DATABASE_URL` set to `url` (unless `env` overrides it). */
export function startCli(args: readonly string[], url: string, env: NodeJS.ProcessEnv = {}): CliProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=@pglock/source', '--import', 'tsx', cliPath, ...args],
    {
      env: { ...process.env, DATABASE_URL: url, NO_COLOR: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `pglock …args` to the end. */
export async function runCli(
  args: readonly string[],
  url: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(args, url, env);
  const { code } = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Runs `main` in this process (no database, no spawn) and captures what it writes. */
export async function runMain(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    ({
      write: (s: string) => {
        append(s);
        return true;
      },
    }) as unknown as NodeJS.WritableStream;
  const code = await main(argv, {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env,
  });
  return { code, stdout, stderr };
}
