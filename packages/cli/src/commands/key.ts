import { InvalidLockKeyError } from '@pglock/core';
import { CliError, ExitCode } from '../exit-codes.ts';
import { styleFor } from '../format.ts';
import { keyInfo } from '../key-info.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';

const keySpec = {
  name: 'key',
  summary: "a name's key, its pg_locks halves and the SQL that computes it",
  usage: 'key <name> [--namespace ns] [--json]',
  positionals: ['<name>'],
  options: {
    namespace: { type: 'string', short: 'n', value: 'ns', description: 'the namespace the name is in' },
    json: {
      type: 'boolean',
      description: 'print JSON (key, classid, objid, objsubid, sql)',
    },
  },
  details: [
    'Computed locally from docs/key-spec.md: nothing connects to a database. A name that starts with - goes after --: pglock key -- -name',
  ],
} as const satisfies CommandSpec;

/** `pglock key <name> [--namespace ns] [--json]`: the key, its pg_locks halves and its SQL. */
export const keyCommand = defineCommand(keySpec, ({ values, positionals }, io) => {
  let info: ReturnType<typeof keyInfo>;
  try {
    info = keyInfo(positionals[0] as string, values.namespace);
  } catch (error) {
    if (InvalidLockKeyError.is(error)) throw new CliError(error.message, ExitCode.usage);
    throw error;
  }
  if (values.json) {
    io.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
    return ExitCode.ok;
  }
  const { dim } = styleFor(io.stdout, io.env);
  io.stdout.write(
    [
      `${dim('key      ')}${info.key}`,
      `${dim('pg_locks ')}classid ${info.classid}, objid ${info.objid}, objsubid 1`,
      `${dim('sql      ')}${wrapSql(info.sql).join('\n         ')}`,
      '',
    ].join('\n'),
  );
  return ExitCode.ok;
});

const PREFIX = "('x' || encode(substring(sha256(";
const SUFFIX = ") FROM 1 FOR 8), 'hex'))::bit(64)::bigint";

/** Breaks the expression at its parentheses and `||` so that it fits 80 columns and still pastes as SQL. */
function wrapSql(sql: string): string[] {
  const input = sql.slice(PREFIX.length, sql.length - SUFFIX.length);
  const parts = input.split(" || '\\x00'::bytea || ");
  const middle =
    parts.length === 2 ? [`  ${parts[0]} || '\\x00'::bytea`, `  || ${parts[1]}`] : [`  ${input}`];
  return [PREFIX, ...middle, SUFFIX];
}
