import type { BigintLockKey } from './lock-key.ts';
import { type Statement, statementText } from './statement.ts';

// The statements of a runOnce run around its job (job-run.ts): the savepoints it runs in, the
// attempts its period has had, the record of how it ended, and what ends a run that went over
// maxRunMs. Values are bound, never concatenated.

/** Longest `last_error` kept: enough for a message and the top of a stack, never a whole dump. */
export const LAST_ERROR_MAX = 2_000;

/** Before the claim: a failed or timed-out run rolls back to here, un-claiming its period. */
export const claimSavepoint: Statement = statementText('SAVEPOINT pglock_run_claim').bind([]);
export const rollbackToClaim: Statement = statementText('ROLLBACK TO SAVEPOINT pglock_run_claim').bind([]);
/** Before each attempt: a retry rolls back to here, keeping the claim. */
export const jobSavepoint: Statement = statementText('SAVEPOINT pglock_run_job').bind([]);
export const rollbackToJob: Statement = statementText('ROLLBACK TO SAVEPOINT pglock_run_job').bind([]);

/**
 * Commits what is recorded so far (releasing the lock) and opens the next transaction at once, in
 * one statement: no statement of a job still running can slip in between and run outside a
 * transaction.
 */
export const commitAndChain: Statement = statementText('COMMIT AND CHAIN').bind([]);
/** The same without the record, when the record could not be written. */
export const rollbackAndChain: Statement = statementText('ROLLBACK AND CHAIN').bind([]);

/**
 * Fails on purpose, so the transaction it runs in is aborted (SQLSTATE 25P02 for every statement
 * after it) until the ORM rolls it back: a timed-out job that goes on sending statements gets
 * errors, never a transaction of its own. 57014 is `query_canceled`, what a cancelled statement says.
 */
export const abortTransaction: Statement = statementText(
  `DO $$ BEGIN RAISE EXCEPTION 'pglock: this runOnce job ran longer than its maxRunMs; its transaction was rolled back' USING ERRCODE = '57014'; END $$`,
).bind([]);

/** Queued behind whatever the job has in flight: settles once that statement has ended. */
export const inFlightMarker: Statement = statementText('SELECT 1 AS drained').bind([]);

// The attempts of this period (0 when the row's last attempts were in another one), the server's
// clock (a retry must still fit in the period), and what a guarded cancel of this transaction needs.
const attemptsText = statementText(
  `SELECT CASE WHEN floor(extract(epoch FROM j.attempt_period) * 1000)::bigint = $1::text::bigint THEN j.attempts ELSE 0 END AS attempts,
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS clock,
    pg_backend_pid() AS pid, extract(epoch FROM now())::text AS xact
  FROM pglock_jobs AS j WHERE j.key = $2::text::bigint`,
);

/** After a claim: the attempts its period has had, the server's clock, the backend and its transaction. */
export function attemptsStatement(key: BigintLockKey, periodStartMs: number): Statement {
  return attemptsText.bind([String(periodStartMs), String(key.value)]);
}

// Only the backend still in this transaction, while it runs a statement: a cancel that arrives
// after the transaction ended must not interrupt anything else on that connection.
const cancelText = statementText(
  `SELECT pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity
    WHERE pid = $1::text::int AND state = 'active' AND extract(epoch FROM xact_start)::text = $2::text`,
);

/** Cancels the statement the job's backend runs, guarded by its transaction's start. */
export function jobCancelStatement(pid: number, xact: string): Statement {
  return cancelText.bind([String(pid), xact]);
}

// A run that committed: in the job's transaction, with the job's writes and the claim.
const okText = statementText(
  `UPDATE pglock_jobs SET outcome = 'ok', run_ms = $1::text::bigint, attempts = $2::text::int,
    attempt_period = to_timestamp($3::text::bigint / 1000.0), last_error = NULL
  WHERE key = $4::text::bigint`,
);

/** The record of a run that resolved: its duration and the attempts its period took. */
export function okRecordStatement(
  key: BigintLockKey,
  periodStartMs: number,
  attempts: number,
  runMs: number,
): Statement {
  return okText.bind([String(runMs), String(attempts), String(periodStartMs), String(key.value)]);
}

// A run that failed or timed out, after its claim was rolled back: the row may not exist yet (a
// job whose first run failed), and its period stays unclaimed.
const failureText = statementText(
  `INSERT INTO pglock_jobs AS j (key, name, namespace, outcome, run_ms, attempts, attempt_period, last_error)
  VALUES ($1::text::bigint, $2::text, nullif($3::text, ''), $4::text, $5::text::bigint, $6::text::int,
    to_timestamp($7::text::bigint / 1000.0), $8::text)
  ON CONFLICT (key) DO UPDATE SET outcome = excluded.outcome, run_ms = excluded.run_ms,
    attempts = excluded.attempts, attempt_period = excluded.attempt_period, last_error = excluded.last_error`,
);

/** How a run that did not commit ended. */
export type FailedOutcome = 'failed' | 'timed-out';

/** The record of a run that threw or timed out (`last_error` truncated to {@link LAST_ERROR_MAX}). */
export function failureRecordStatement(
  key: BigintLockKey,
  record: {
    readonly outcome: FailedOutcome;
    readonly periodStartMs: number;
    readonly attempts: number;
    readonly runMs: number;
    readonly error: string;
  },
): Statement {
  return failureText.bind([
    String(key.value),
    key.name ?? String(key.value),
    key.namespace ?? '',
    record.outcome,
    String(record.runMs),
    String(record.attempts),
    String(record.periodStartMs),
    truncate(record.error),
  ]);
}

function truncate(text: string): string {
  // By code points, so a cut never leaves half a surrogate pair (invalid UTF-8 for the server).
  const points = Array.from(text);
  return points.length <= LAST_ERROR_MAX ? text : `${points.slice(0, LAST_ERROR_MAX - 1).join('')}…`;
}
