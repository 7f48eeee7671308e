import packageJson from '../package.json' with { type: 'json' };
import type { CommandIo } from './commands/io.ts';
import { jobsCommand } from './commands/jobs.ts';
import { keyCommand } from './commands/key.ts';
import { locksCommand } from './commands/locks.ts';
import { runCommand } from './commands/run.ts';
import { schemaCommand } from './commands/schema.ts';
import { waitCommand } from './commands/wait.ts';
import { CliError, ExitCode } from './exit-codes.ts';
import { type Command, closest, commandHelp } from './parse-command.ts';

const commands: readonly Command[] = [
  locksCommand,
  jobsCommand,
  keyCommand,
  waitCommand,
  runCommand,
  schemaCommand,
];

const width = Math.max(...commands.map(({ spec }) => spec.name.length)) + 2;
const generalHelp = `pglock: PostgreSQL advisory locks from the shell

Usage: pglock <command> [options]

Commands:
${commands.map(({ spec }) => `  ${spec.name.padEnd(width)}${spec.summary}`).join('\n')}

pglock <command> --help (or pglock help <command>) lists a command's options.
Every command that connects takes --url (default: DATABASE_URL).
--timeout: 500ms, 30s, 2m…; 0 tries once. Default: wait without limit.

Exit codes: 0 ok (run: the command's own code; 128+n if signal n killed it),
64 usage, 69 database unavailable, 70 lock lost, 75 busy or timed out,
77 permission denied.
`;

/**
 * Runs the `pglock` command line and resolves its exit code. Errors the user can act on are printed
 * on stderr (a mistake in the arguments with the command's usage); anything else is a bug and keeps
 * its stack.
 *
 * @example
 * ```ts
 * import { main } from '@pglock/cli';
 *
 * process.exitCode = await main(['key', 'leaderboard']);
 * ```
 */
export async function main(argv: readonly string[], io: CommandIo = process): Promise<number> {
  const [name, ...args] = argv;
  try {
    switch (name) {
      case '--version':
      case '-v':
        io.stdout.write(`${packageJson.version}\n`);
        return ExitCode.ok;
      case undefined:
      case '--help':
      case '-h':
        io.stdout.write(generalHelp);
        return name === undefined ? ExitCode.usage : ExitCode.ok;
      case 'help': {
        if (args[0] === undefined) {
          io.stdout.write(generalHelp);
          return ExitCode.ok;
        }
        io.stdout.write(commandHelp(find(args[0]).spec));
        return ExitCode.ok;
      }
      default:
        return await find(name).execute(args, io);
    }
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`pglock: ${error.message}\n${error.usage === undefined ? '' : `${error.usage}\n`}`);
      return error.exitCode;
    }
    throw error;
  }
}

function find(name: string): Command {
  const command = commands.find((c) => c.spec.name === name);
  if (command !== undefined) return command;
  const near = closest(
    name,
    commands.map((c) => c.spec.name),
  );
  throw new CliError(
    `unknown command ${JSON.stringify(name)}${near === undefined ? '' : ` (did you mean ${near}?)`}`,
    ExitCode.usage,
    {
      usage: `Usage: pglock <command> [options]; commands: ${commands.map((c) => c.spec.name).join(', ')}.\nRun pglock --help for more.`,
    },
  );
}
