import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './embedded-server.ts';

/** Where the repo keeps the PgBouncer configuration the tests use. */
const template = new URL('../pgbouncer/pgbouncer.ini', import.meta.url);

/** A PgBouncer in front of the test database. */
export interface PgBouncer {
  readonly url: string;
  readonly mode: 'transaction' | 'session';
  stop(): Promise<void>;
}

/**
 * The PgBouncer binary, if installed: `PGLOCK_PGBOUNCER` (a path, or `none` to run as a machine
 * without it, as one CI lane does), else the first `pgbouncer` on `PATH` or in the system folders
 * Debian's package installs to (`/usr/sbin` is not on every user's `PATH`).
 */
export function findPgBouncer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const chosen = env.PGLOCK_PGBOUNCER?.trim();
  if (chosen === 'none') return undefined;
  const folders = [...(env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/local/sbin'];
  const candidates = chosen ? [chosen] : [...new Set(folders)].map((folder) => join(folder, 'pgbouncer'));
  for (const path of candidates) {
    if (spawnSync(path, ['--version']).status === 0) return path;
  }
  return undefined;
}

/**
 * Starts PgBouncer on a free loopback port in `mode`, in front of `upstreamUrl`, with the config
 * from `packages/test-kit/pgbouncer/pgbouncer.ini`. PgBouncer refuses to run as root, so as root it
 * runs as the `postgres` OS user.
 */
export async function startPgBouncer(
  binary: string,
  upstreamUrl: string,
  mode: PgBouncer['mode'],
): Promise<PgBouncer> {
  const upstream = new URL(upstreamUrl);
  const dir = await mkdtemp(join(tmpdir(), 'pglock-pgbouncer-'));
  await chmod(dir, 0o777);
  const port = await freePort();
  const values: Record<string, string> = {
    upstream_host: upstream.hostname,
    upstream_port: upstream.port || '5432',
    upstream_user: decodeURIComponent(upstream.username || 'postgres'),
    upstream_password_clause: upstream.password ? ` password=${decodeURIComponent(upstream.password)}` : '',
    listen_port: String(port),
    pool_mode: mode,
    dir,
  };
  const config = (await readFile(template, 'utf8')).replace(
    /\{\{(\w+)\}\}/g,
    (_, key: string) => values[key] ?? '',
  );
  await writeFile(join(dir, 'pgbouncer.ini'), config);
  await writeFile(join(dir, 'userlist.txt'), `"${values.upstream_user}" ""\n`);
  const asRoot = process.getuid?.() === 0;
  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      const log = await readFile(join(dir, 'pgbouncer.log'), 'utf8').catch(() => '');
      await rm(dir, { recursive: true, force: true });
      throw new Error(`PgBouncer did not start: ${stderr}\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const user = encodeURIComponent(values.upstream_user ?? 'postgres');
  const database = upstream.pathname.replace(/^\//, '') || 'postgres';
  return {
    url: `postgres://${user}@127.0.0.1:${port}/${database}`,
    mode,
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
