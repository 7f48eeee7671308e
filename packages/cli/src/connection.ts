import { sqlStateOf } from '@pglock/core/adapter';
import pg from 'pg';
import { CliError, ExitCode } from './exit-codes.ts';

/** Where the URL came from, for messages. */
export interface ConnectionTarget {
  readonly url: string;
  readonly source: '--url' | 'DATABASE_URL';
  /** `host:port/database`, with no user or password, for messages. */
  readonly label: string;
}

/**
 * Picks the URL from `--url` or `DATABASE_URL` and checks it is a PostgreSQL URL before any
 * connection is tried (pg would read many malformed strings as a socket path and fail obscurely).
 *
 * @example
 * ```ts
 * import { connectionTarget } from '@pglock/cli';
 *
 * const target = connectionTarget(undefined, process.env);
 * ```
 */
export function connectionTarget(url: string | undefined, env: NodeJS.ProcessEnv): ConnectionTarget {
  const source = url !== undefined ? '--url' : 'DATABASE_URL';
  const text = url ?? env.DATABASE_URL;
  if (text === undefined || text === '') {
    throw new CliError(
      'No database given: set DATABASE_URL or pass --url postgres://user@host:5432/db.',
      ExitCode.usage,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new CliError(
      `${source} is not a URL; expected postgres://user:password@host:5432/database.`,
      ExitCode.usage,
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new CliError(
      `${source} must start with postgres:// or postgresql:// (got ${parsed.protocol}//…).`,
      ExitCode.usage,
    );
  }
  const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
  const label = `${host}:${parsed.port || '5432'}${parsed.pathname || '/'}`;
  return { url: text, source, label };
}

/**
 * Opens a small pool for the CLI and checks it with one query, turning driver errors into messages
 * that say what to do. `max` is the number of connections the command needs at once.
 *
 * @example
 * ```ts
 * import { connectionTarget, openPool } from '@pglock/cli';
 *
 * const pool = await openPool(connectionTarget(undefined, process.env), { max: 2 });
 * ```
 */
export async function openPool(
  target: ConnectionTarget,
  options: { readonly max?: number; readonly applicationName?: string } = {},
): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: target.url,
    max: options.max ?? 1,
    application_name: options.applicationName ?? 'pglock',
    connectionTimeoutMillis: 10_000,
  });
  // An idle pooled connection that dies (server restart) must not crash the CLI with an unhandled error.
  pool.on('error', () => undefined);
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectionError(error, target);
  }
  return pool;
}

/**
 * Turns a driver error into a {@link CliError} with a message for a person at a terminal.
 *
 * @example
 * ```ts
 * import { connectionError } from '@pglock/cli';
 *
 * throw connectionError(error, target);
 * ```
 */
export function connectionError(error: unknown, target: ConnectionTarget): CliError {
  const where = `${target.label} (from ${target.source})`;
  const code = errnoOf(error);
  const state = sqlStateOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (code === 'ECONNREFUSED') {
    return new CliError(
      `Cannot connect to ${where}: connection refused. Is PostgreSQL running and listening there?`,
      ExitCode.unavailable,
      { cause: error },
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new CliError(`Cannot connect to ${where}: unknown host.`, ExitCode.unavailable, { cause: error });
  }
  if (state === '28P01' || state === '28000') {
    return new CliError(
      `PostgreSQL at ${where} refused the login: ${detail}. Check the user and password in the URL.`,
      ExitCode.unavailable,
      { cause: error },
    );
  }
  if (state === '3D000') {
    return new CliError(`PostgreSQL at ${where}: ${detail}.`, ExitCode.unavailable, { cause: error });
  }
  if (state === '42501') return permissionError(error);
  return new CliError(`Cannot use the database at ${where}: ${detail}`, ExitCode.unavailable, {
    cause: error,
  });
}

/**
 * The message for SQLSTATE 42501 (insufficient privilege), with the grant that fixes it.
 *
 * @example
 * ```ts
 * import { permissionError } from '@pglock/cli';
 *
 * throw permissionError(error);
 * ```
 */
export function permissionError(error: unknown): CliError {
  const detail = error instanceof Error ? error.message : String(error);
  return new CliError(
    `Permission denied: ${detail}. Reading other sessions' application names and addresses needs the pg_read_all_stats role (GRANT pg_read_all_stats TO <user>).`,
    ExitCode.noPermission,
    { cause: error },
  );
}

function errnoOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, errors } = error as { code?: unknown; errors?: unknown };
  if (typeof code === 'string') return code;
  // Node reports a refused dual-stack connect as an AggregateError of the per-address errors.
  if (Array.isArray(errors)) return errors.map(errnoOf).find((c) => c !== undefined);
  return undefined;
}
