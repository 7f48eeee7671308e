import { describe, expect, inject, it } from 'vitest';
import { runCli, runMain } from './run-cli.ts';

const url = inject('databaseUrl');
const commands = ['locks', 'key', 'wait', 'run', 'schema'] as const;

describe('mistakes in the arguments', () => {
  it.each([
    [['locks', '--wach'], 'unknown option --wach (did you mean --watch?)', 'Usage: pglock locks [--watch]'],
    [
      ['locks', '--intreval', '1s'],
      'unknown option --intreval (did you mean --interval?)',
      'Usage: pglock locks',
    ],
    [['locks', '--name', 'f'], 'unknown option --name (did you mean --names?)', 'Usage: pglock locks'],
    [
      ['key', 'x', '--namspace', 'a'],
      'unknown option --namspace (did you mean --namespace?)',
      'Usage: pglock key',
    ],
    [
      ['wait', 'x', '--tiemout', '1s'],
      'unknown option --tiemout (did you mean --timeout?)',
      'Usage: pglock wait',
    ],
    [
      ['run', 'x', '--sahred', '--', 'true'],
      'unknown option --sahred (did you mean --shared?)',
      'Usage: pglock run',
    ],
    [['locks', '--colour'], 'unknown option --colour', 'Usage: pglock locks'],
    [['key', 'x', '-x'], 'unknown option -x', 'Usage: pglock key'],
    [['wait', 'x', '--timeout'], 'option --timeout needs a value (--timeout 30s)', 'Usage: pglock wait'],
    [
      ['wait', 'x', '--timeout', '--shared'],
      'option --timeout needs a value (--timeout 30s)',
      'Usage: pglock wait',
    ],
    [['key', 'x', '--json=yes'], 'option --json takes no value', 'Usage: pglock key'],
    [['key'], 'pglock key needs <name>', 'Usage: pglock key <name>'],
    [['key', 'a', 'b'], 'unexpected argument "b" (pglock key takes <name>)', 'Usage: pglock key'],
    [['locks', 'extra'], 'unexpected argument "extra"', 'Usage: pglock locks'],
    [['run', 'x'], 'pglock run needs a command after --', 'Usage: pglock run <name>'],
    [['run', '--', 'true'], 'pglock run needs <name>', 'Usage: pglock run <name>'],
  ])('%j: exit 64, the mistake, then the usage', async (argv, message, usage) => {
    const { code, stdout, stderr } = await runMain(argv);
    expect(code).toBe(64);
    expect(stdout).toBe('');
    const [first, second, third] = stderr.split('\n');
    expect(first).toBe(`pglock: ${message}`);
    expect(second?.startsWith(usage)).toBe(true);
    expect(third).toBe(`Run pglock ${argv[0]} --help for every option.`);
    // Node's own parseArgs text advised quoting the option after `--`, which is wrong here.
    expect(stderr).not.toMatch(/positional|place it at the end/);
  });

  it('an unknown command is named with the closest command', async () => {
    const typo = await runMain(['lock']);
    expect(typo.code).toBe(64);
    expect(typo.stderr).toMatch(/^pglock: unknown command "lock" \(did you mean locks\?\)\n/);
    const far = await runMain(['frobnicate']);
    expect(far.code).toBe(64);
    expect(far.stderr).toMatch(/^pglock: unknown command "frobnicate"\nUsage: pglock <command>/);
    expect((await runMain(['help', 'frobnicate'])).code).toBe(64);
  });

  it('the binary reports a typo the same way, on stderr, exit 64', async () => {
    const { code, stdout, stderr } = await runCli(['locks', '--wach'], url);
    expect(code).toBe(64);
    expect(stdout).toBe('');
    expect(stderr.split('\n').slice(0, 2)).toEqual([
      'pglock: unknown option --wach (did you mean --watch?)',
      'Usage: pglock locks [--watch] [--json] [--names file] [--namespace ns] [--interval 2s] [--url url]',
    ]);
  });
});

describe('help', () => {
  it.each(commands)(
    'pglock %s --help, -h and pglock help <command> print its help and exit 0',
    async (command) => {
      const outputs = await Promise.all([
        runMain([command, '--help']),
        runMain([command, '-h']),
        runMain(['help', command]),
        // Help wins over every other mistake on the line.
        runMain([command, '--no-such-option', '--help']),
      ]);
      for (const { code, stdout, stderr } of outputs) {
        expect(code).toBe(0);
        expect(stderr).toBe('');
        expect(stdout).toBe(outputs[0]?.stdout);
      }
      const text = outputs[0]?.stdout ?? '';
      expect(text).toMatch(new RegExp(`^Usage: pglock ${command}\\b`));
      expect(text).toContain('Options:');
      expect(text).toMatch(/-h, --help +show this help/);
      for (const line of text.split('\n')) expect([...line].length).toBeLessThanOrEqual(80);
    },
  );

  it("every command's help lists each option of its usage line", async () => {
    for (const command of commands) {
      const { stdout } = await runMain([command, '--help']);
      const usage = stdout.slice(0, stdout.indexOf('\n\n'));
      for (const [option] of usage.matchAll(/--[a-z]+/g))
        expect(stdout).toMatch(new RegExp(`[ ,] ${option}\\b`));
    }
  });

  it('pglock --help and pglock help list every command and exit 0; bare pglock prints it and exits 64', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const { code, stdout } = await runMain(argv);
      expect(code).toBe(0);
      for (const command of commands) expect(stdout).toMatch(new RegExp(`^  ${command} +\\S`, 'm'));
      expect(stdout).toContain('pglock <command> --help');
    }
    expect((await runMain([])).code).toBe(64);
  });

  it('prints the version', async () => {
    const { code, stdout } = await runMain(['--version']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('--help after -- belongs to the command pglock run starts', async () => {
    const { code, stdout } = await runCli(
      ['run', `cli-args:${Math.random()}`, '--', 'sh', '-c', 'echo "$1"', 'sh', '--help'],
      url,
    );
    expect(code).toBe(0);
    expect(stdout).toBe('--help\n');
  });

  it('a name that starts with - goes after -- in pglock key', async () => {
    const { code, stdout } = await runMain(['key', '--json', '--', '-dash']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ name: '-dash' });
  });
});
