import { parseArgs } from 'node:util';
import type { CommandIo } from './commands/io.ts';
import { CliError, ExitCode } from './exit-codes.ts';

/** One `--option` of a command. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** The value's placeholder in help and usage, for a string option (`30s`, `file`). */
  readonly value?: string;
  readonly description: string;
}

/** What a command accepts, and the text of its help. */
export interface CommandSpec<
  O extends Readonly<Record<string, OptionSpec>> = Readonly<Record<string, OptionSpec>>,
> {
  readonly name: string;
  /** One line for `pglock --help`. */
  readonly summary: string;
  /** The usage line without the leading `pglock `: `run <name> [--timeout 30s] -- <command> [args…]`. */
  readonly usage: string;
  /** Placeholders of the positional arguments, in order; exactly these many are required. */
  readonly positionals: readonly string[];
  /** When set, the arguments after the first `--` are the command's own (`pglock run … -- cmd args`). */
  readonly rest?: string;
  readonly options: O;
  /** Paragraphs printed after the options in `pglock <command> --help`, wrapped at 80 columns. */
  readonly details?: readonly string[];
}

/** The parsed value of each option; absent when not given. */
export type OptionValues<O extends Readonly<Record<string, OptionSpec>>> = {
  readonly [K in keyof O]?: O[K]['type'] extends 'string' ? string : boolean;
};

/** A parsed command line, or a request for the command's help. */
export type ParsedCommand<O extends Readonly<Record<string, OptionSpec>>> =
  | { readonly help: true }
  | {
      readonly help: false;
      readonly values: OptionValues<O>;
      readonly positionals: readonly string[];
      /** The arguments after `--` when the spec has `rest`. */
      readonly rest: readonly string[];
    };

const HELP: OptionSpec = { type: 'boolean', short: 'h', description: 'show this help' };

/**
 * Parses a command's arguments with `node:util`'s `parseArgs` (tokens only, so that every mistake
 * gets our message): an unknown option is named with the closest known one, a missing value or
 * argument prints the usage; all are {@link CliError}s with exit code 64. `--help` / `-h` anywhere
 * before `--` wins over every other mistake.
 *
 * @example
 * ```ts
 * const parsed = parseCommand(keySpec, ['leaderboard', '--json']);
 * if (!parsed.help) console.log(parsed.positionals[0], parsed.values.json);
 * ```
 */
export function parseCommand<O extends Readonly<Record<string, OptionSpec>>>(
  spec: CommandSpec<O>,
  args: readonly string[],
): ParsedCommand<O> {
  const all: Readonly<Record<string, OptionSpec>> = { ...spec.options, help: HELP };
  const config = Object.fromEntries(
    Object.entries(all).map(([name, o]) => [
      name,
      o.short ? { type: o.type, short: o.short } : { type: o.type },
    ]),
  );
  const { tokens } = parseArgs({
    args: [...args],
    options: config,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const terminator = tokens.find((t) => t.kind === 'option-terminator')?.index;
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) return { help: true };

  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      if (spec.rest === undefined || terminator === undefined || token.index < terminator) {
        positionals.push(token.value);
      }
      continue;
    }
    if (token.kind !== 'option') continue;
    const option = all[token.name];
    if (option === undefined) {
      throw usageError(spec, `unknown option ${token.rawName}${suggestion(token.rawName, all)}`);
    }
    if (option.type === 'boolean') {
      if (token.value !== undefined) throw usageError(spec, `option --${token.name} takes no value`);
      values[token.name] = true;
    } else if (token.value === undefined || (!token.inlineValue && token.value.startsWith('-'))) {
      throw usageError(
        spec,
        `option --${token.name} needs a value (--${token.name} ${option.value ?? 'value'})`,
      );
    } else {
      values[token.name] = token.value;
    }
  }
  if (positionals.length !== spec.positionals.length) {
    const expected = spec.positionals.join(' ');
    throw usageError(
      spec,
      positionals.length < spec.positionals.length
        ? `pglock ${spec.name} needs ${expected}`
        : `unexpected argument ${JSON.stringify(positionals[spec.positionals.length])}${expected ? ` (pglock ${spec.name} takes ${expected})` : ''}`,
    );
  }
  const rest = spec.rest === undefined || terminator === undefined ? [] : args.slice(terminator + 1);
  if (spec.rest !== undefined && rest.length === 0) {
    throw usageError(spec, `pglock ${spec.name} needs ${spec.rest} after --`);
  }
  return { help: false, values: values as OptionValues<O>, positionals, rest };
}

/**
 * The text of `pglock <command> --help`: usage, summary, one line per option, details.
 *
 * @example
 * ```ts
 * process.stdout.write(commandHelp(keySpec));
 * ```
 */
export function commandHelp(spec: CommandSpec): string {
  const rows = Object.entries({ ...spec.options, help: HELP }).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` <${o.value ?? 'value'}>` : ''}`;
    return [flag, o.description] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  return [
    ...wrapUsage(`Usage: pglock ${spec.usage}`),
    '',
    `${spec.summary[0]?.toUpperCase()}${spec.summary.slice(1)}.`,
    '',
    'Options:',
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}${text}`),
    ...(spec.details ?? []).flatMap((paragraph) => ['', ...wrapWords(paragraph)]),
    '',
  ].join('\n');
}

/**
 * " (did you mean --watch?)" when one known name is close to `typed` (a typo, or a prefix), else "".
 *
 * @example
 * ```ts
 * suggestion('--wach', { watch: { type: 'boolean', description: '' } }); // ' (did you mean --watch?)'
 * ```
 */
export function suggestion(typed: string, options: Readonly<Record<string, OptionSpec>>): string {
  const name = typed.replace(/^-+/, '');
  const match = closest(name, Object.keys(options));
  return match === undefined ? '' : ` (did you mean --${match}?)`;
}

/**
 * The candidate nearest to `typed`: the only one it is a prefix of, else the one within an edit
 * distance (insertions, deletions, substitutions, swaps of neighbours) of a third of its length.
 *
 * @example
 * ```ts
 * closest('lock', ['locks', 'key', 'wait', 'run']); // 'locks'
 * ```
 */
export function closest(typed: string, candidates: readonly string[]): string | undefined {
  if (typed.length === 0) return undefined;
  const prefixed = candidates.filter((c) => c.startsWith(typed));
  if (prefixed.length === 1) return prefixed[0];
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(typed.toLowerCase(), candidate);
    if (distance <= limit && (best === undefined || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = d;
    }
  }
  return at(a.length, b.length);
}

/** Breaks a usage line before its `[…]` groups so that it fits 80 columns, continuing under the command. */
function wrapUsage(usage: string): string[] {
  const indent = ' '.repeat(usage.indexOf(' ', 'Usage: pglock '.length) + 1);
  const lines: string[] = [];
  let line = '';
  for (const part of usage.split(/ (?=\[|-- )/)) {
    if (line !== '' && line.length + 1 + part.length > 80) {
      lines.push(line);
      line = indent + part;
    } else line = line === '' ? part : `${line} ${part}`;
  }
  return [...lines, line];
}

function wrapWords(text: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > 80) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

function usageError(spec: CommandSpec, message: string): CliError {
  return new CliError(message, ExitCode.usage, {
    usage: `Usage: pglock ${spec.usage}\nRun pglock ${spec.name} --help for every option.`,
  });
}

/** A command of the `pglock` binary: its spec, and what runs once the arguments parsed. */
export interface Command {
  readonly spec: CommandSpec;
  /** Parses `args` (printing the help for `--help`) and runs the command; resolves the exit code. */
  execute(args: readonly string[], io: CommandIo): Promise<number>;
}

/** The arguments a command's body receives. */
export type CommandArgs<O extends Readonly<Record<string, OptionSpec>>> = Extract<
  ParsedCommand<O>,
  { readonly help: false }
>;

/**
 * Binds a spec to the body that runs once its arguments parsed; `--help` prints the command's help.
 *
 * @example
 * ```ts
 * const hello = defineCommand(helloSpec, ({ positionals }, io) => {
 *   io.stdout.write(`hello ${positionals[0]}\n`);
 *   return 0;
 * });
 * ```
 */
export function defineCommand<O extends Readonly<Record<string, OptionSpec>>>(
  spec: CommandSpec<O>,
  body: (args: CommandArgs<O>, io: CommandIo) => number | Promise<number>,
): Command {
  return {
    spec,
    async execute(args, io) {
      const parsed = parseCommand(spec, args);
      if (parsed.help) {
        io.stdout.write(commandHelp(spec));
        return ExitCode.ok;
      }
      return body(parsed, io);
    },
  };
}
