/**
 * Sending a fenced call's opening query (its scope and guard, one simple query) and reading its
 * result; for writes, with the prepared guard of prepared-guard.ts and its recovery.
 */
import type { ClientBase, QueryResult } from "pg";
import { FenceError } from "../errors.js";
import type { MarksRow } from "./guard.js";
import { preparedWriteGuard, recoverPreparedGuard } from "./prepared-guard.js";
import type { FenceScope } from "./scope.js";

/**
 * Opens `scope` and runs the write guard in one simple query (the prepared guard where the connection
 * has it); returns the guard's result. If the connection's prepared guard turned out missing or
 * already there, nothing of the guard ran: the scope is rolled back and the guard sent again.
 */
export async function sendWriteGuard(
  client: ClientBase,
  scope: FenceScope,
  table: string,
  resource: string,
  token: bigint,
): Promise<QueryResult<MarksRow>> {
  // Twice at most: a PREPARE found already there (42P05), then an EXECUTE found missing (26000).
  for (let retries = 2; ; retries--) {
    try {
      const guard = preparedWriteGuard(client, table, resource, token, "rows");
      return await sendGuard(client, `${scope.open}; ${guard}`);
    } catch (error) {
      if (retries === 0 || !recoverPreparedGuard(client, table, "rows", unwrapped(error))) throw error;
      await client.query(scope.rollback);
    }
  }
}

/** The pg error behind a FenceError this module made of it (FENCE_TABLE_OUTDATED), or the error. */
export function unwrapped(error: unknown): unknown {
  return error instanceof FenceError && error.code === "FENCE_TABLE_OUTDATED" ? error.cause : error;
}

/** Sends a scope opening and guard as one simple query; returns the guard's (the last) result. */
export async function sendGuard(client: ClientBase, text: string): Promise<QueryResult<MarksRow>> {
  const results = (await outdatedTable(() => client.query(text))) as unknown as QueryResult<MarksRow>[];
  if (!Array.isArray(results)) {
    // One result per statement is what a multi-statement query returns; anything else means a
    // client that does not run them as one simple query, and the guard's outcome is unknown.
    throw new FenceError("FENCE_BAD_OPTIONS", "the pg client did not return one result per statement");
  }
  return results.at(-1)!;
}

// SQLSTATEs of a fence table created before the read rule: no read_token column, token NOT NULL.
const UNDEFINED_COLUMN = "42703";
const NOT_NULL_VIOLATION = "23502";

/** Runs `query`, turning the errors of a fence table from before the read rule into one that says so. */
export async function outdatedTable<R>(query: () => Promise<R>): Promise<R> {
  try {
    return await query();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== UNDEFINED_COLUMN && code !== NOT_NULL_VIOLATION) throw error;
    throw new FenceError(
      "FENCE_TABLE_OUTDATED",
      "the fence table predates the read rule (it has no nullable token and read_token columns): run " +
        "createFenceTable() again, or the statements of sql/fence-table.sql, to bring it up to date",
      { cause: error },
    );
  }
}
