import { createRequire } from 'node:module';
import type { CommandIo } from './commands/io.ts';
import { keyCommand } from './commands/key.ts';
import { locksCommand } from './commands/locks.ts';
import { runCommand } from './commands/run.ts';
import { waitCommand } from './commands/wait.ts';
import { CliError, ExitCode } from './exit-codes.ts';

const help = `pglock: PostgreSQL advisory locks from the shell

Usage:
  pglock locks [--watch] [--json] [--names file] [--namespace ns]
               [--interval 2s]           holders and waiters of every lock
  pglock key <name> [--namespace ns] [--json]
                                         a name's key, pg_locks halves and SQL
  pglock wait <name> [--timeout 30s] [--namespace ns] [--shared]
                                         wait until the lock is free
  pglock run <name> [--timeout 30s] [--namespace ns] [--shared] -- cmd args…
                                         run a command holding the lock

Every command that connects takes --url (default: DATABASE_URL).
--timeout: 500ms, 30s, 2m…; 0 tries once. Default: wait without limit.

Exit codes: 0 ok (run: the command's own code; 128+n if signal n killed it),
64 usage, 69 database unavailable, 70 lock lost, 75 busy or timed out,
77 permission denied.
`;

/**
 * Runs the `pglock` command line and resolves its exit code. Errors the user can act on are printed
 * as one line on stderr; anything else is a bug and keeps its stack.
 *
 * @example
 * ```ts
 * import { main } from '@pglock/cli';
 *
 * process.exitCode = await main(['key', 'leaderboard']);
 * ```
 */
export async function main(argv: readonly string[], io: CommandIo = process): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case 'locks':
        return await locksCommand(args, io);
      case 'key':
        return keyCommand(args, io);
      case 'wait':
        return await waitCommand(args, io);
      case 'run':
        return await runCommand(args, io);
      case '--version':
      case '-v':
        io.stdout.write(`${createRequire(import.meta.url)('../package.json').version}\n`);
        return ExitCode.ok;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(help);
        return command === undefined ? ExitCode.usage : ExitCode.ok;
      default:
        throw new CliError(`Unknown command ${JSON.stringify(command)}; see pglock --help.`, ExitCode.usage);
    }
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`pglock: ${error.message}\n`);
      return error.exitCode;
    }
    // parseArgs's own errors (unknown option, missing value) are usage errors.
    if (isArgError(error)) {
      io.stderr.write(`pglock: ${(error as Error).message}\n`);
      return ExitCode.usage;
    }
    throw error;
  }
}

function isArgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}
