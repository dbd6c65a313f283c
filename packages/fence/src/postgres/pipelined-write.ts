/**
 * The fast path of a sqlStatements() write, on a connection in pg's pipeline mode: the scope's opening,
 * the guard, the statements and the commit all go out at once, one round trip. Nothing of the
 * caller's runs in between, so nothing needs the guard's answer first.
 *
 * So a refusal must stop statements already on the wire: the guard refuses with an error (guard.ts,
 * WriteRefusal "error"), which aborts the transaction; Postgres then skips every statement behind it
 * (25P02, never executed) and the commit rolls back. A failing statement aborts it the same way. The
 * opening is a query of its own, ahead of the guard: whatever is wrong with the guard's query, even
 * text Postgres cannot parse, it fails inside the transaction, never leaving the statements to run
 * outside one.
 */
import type { ClientBase, QueryResult } from "pg";
import { FenceError, StaleTokenError } from "../errors.js";
import { decideWrite } from "../rule.js";
import type { Connection } from "./connection.js";
import { raisedRefusal } from "./guard.js";
import { preparedWriteGuard, recoverPreparedGuard } from "./prepared-guard.js";
import { outdatedTable, unwrapped } from "./send-guard.js";
import type { CheckedStatement } from "./statements-write.js";

/** Whether pg sends this client's queries without waiting for earlier replies (`pipeline: true`). */
export function inPipelineMode(client: ClientBase): boolean {
  return (client as { pipeline?: unknown }).pipeline === true;
}

/**
 * Runs the pipelined write on `connection` and gives the connection back. Resolves with each
 * statement's result; rejects with StaleTokenError for a refusal, with a failing statement's error
 * unchanged, or with FENCE_WRITE_FAILED if the commit rolled back. Nothing is written in any of these.
 */
export async function runPipelinedWrite(
  { client, scope, release }: Connection,
  table: string,
  resource: string,
  token: bigint,
  statements: readonly CheckedStatement[],
): Promise<QueryResult[]> {
  let broken: Error | undefined;
  try {
    // Twice at most, as sendWriteGuard(): the connection's prepared guard found there, then missing.
    for (let retries = 2; ; retries--) {
      // Each query() call puts its messages on the wire before the next one is made.
      const sent = [
        client.query(scope.open),
        outdatedTable(() => client.query(preparedWriteGuard(client, table, resource, token, "error"))),
        ...statements.map(({ text, values }) => client.query(text, values)),
      ];
      const outcomes = await Promise.allSettled([...sent, scope.commit(client)]);
      const commit = outcomes.pop() as PromiseSettledResult<boolean>;
      if (commit.status === "rejected") {
        // The commit itself failed (a deferred constraint, a dropped connection): roll back as the
        // general path does, and give up the connection if even that fails.
        try {
          await client.query(scope.rollback);
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
      }
      // The first query that failed, in the order they were sent: the guard's refusal, or the
      // statement that aborted the transaction (those after it only say so, 25P02).
      const failed = outcomes.find((outcome) => outcome.status === "rejected");
      if (failed) {
        const guardFailed = failed === outcomes[1];
        if (guardFailed && commit.status === "fulfilled" && retries > 0) {
          // Rolled back already, nothing of it executed: the guard alone needs sending again.
          if (recoverPreparedGuard(client, table, "error", unwrapped(failed.reason))) continue;
        }
        throw refusalOrFailure(resource, token, failed.reason);
      }
      if (commit.status === "rejected") throw commit.reason;
      if (!commit.value) {
        throw new FenceError(
          "FENCE_WRITE_FAILED",
          `the fenced write of ${JSON.stringify(resource)} was rolled back at commit; nothing was written`,
        );
      }
      return outcomes.slice(2).map((outcome) => (outcome as PromiseFulfilledResult<QueryResult>).value);
    }
  } finally {
    release(broken);
  }
}

/** StaleTokenError for the guard's refusal, read from its error; any other failure as it is. */
function refusalOrFailure(resource: string, token: bigint, failure: unknown): unknown {
  const marks = raisedRefusal(failure);
  if (!marks) return failure;
  const decision = decideWrite(marks, token);
  const { code, current } = decision.accepted
    ? { code: "FENCE_STALE_TOKEN" as const, current: 0n }
    : decision.refusal;
  return new StaleTokenError(resource, token, current, code);
}
