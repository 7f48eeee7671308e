#!/usr/bin/env node
import { main } from './main.ts';

// The exit code is set, not forced, so that stdout is flushed to a pipe before the process ends.
process.exitCode = await main(process.argv.slice(2));
