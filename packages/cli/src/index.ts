export {
  type ConnectionTarget,
  connectionError,
  connectionTarget,
  openPool,
  permissionError,
} from './connection.ts';
export { formatDuration, parseDuration } from './duration.ts';
export { CliError, ExitCode } from './exit-codes.ts';
export { formatLockReport, type Style, styleFor, WIDTH } from './format.ts';
export { formatJobsReport } from './format-jobs.ts';
export {
  buildJobsReport,
  type JobEntry,
  type JobRun,
  type JobSchedule,
  type JobsReport,
  type LeaderEntry,
  type LeaderHolder,
  readJobsReport,
} from './jobs-report.ts';
export { type KeyInfo, keyInfo, keySql } from './key-info.ts';
export {
  bigintKeys,
  buildLockReport,
  type LockEntry,
  type LockReport,
  type LockSession,
} from './lock-report.ts';
export { main } from './main.ts';
export {
  indexNames,
  type KnownName,
  type LockName,
  loadNamesFile,
  type NameIndex,
  type NameSource,
  nameMatches,
  parseNames,
} from './names.ts';
export {
  lockNamesTable,
  type RegistryDb,
  type RegistryRead,
  readRegistry,
  registerLockNames,
} from './registry.ts';
