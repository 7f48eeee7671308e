import { constants } from 'node:os';

/** The shell's exit code for a process ended by `signal`: 128 + its number. */
export function signalExitCode(signal: string): number {
  const number = constants.signals[signal as NodeJS.Signals];
  return 128 + (typeof number === 'number' ? number : 15);
}
