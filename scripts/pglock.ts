// `pnpm pglock <command> …`: the pglock CLI run from source in a checkout (no build, no global
// install). Relative paths (`--names ./names.txt`, `run … -- ./job.sh`) are relative to the folder
// pnpm was started in, as with an installed `pglock`.
import { main } from '../packages/cli/src/main.ts';

const argv = process.argv.slice(2);
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by pnpm for this script, not a turbo task's input
const startedIn = process.env.INIT_CWD;
if (startedIn) process.chdir(startedIn);
// `pnpm pglock -- key x` hands the script the `--` too; an installed `pglock` never sees it.
process.exitCode = await main(argv[0] === '--' ? argv.slice(1) : argv);
