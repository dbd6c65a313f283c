/**
 * A fenced Postgres write given as data, `sqlStatements({ text, values }, ...)`, instead of a function
 * that runs queries on the transaction's client. It is still a write function (fence(), request.fenced()
 * and any wrapper take it as one, and it runs its statements one after another on `tx`), but the
 * Postgres store recognises it: nothing of the caller's decides between the statements, so on a
 * connection in pg's pipeline mode the store can send the guard, the statements and COMMIT at once,
 * one round trip, without waiting to learn whether the token was accepted.
 *
 * Recognised as redisCommands() writes are, by a property under a symbol this module does not export:
 * a wrapper of the caller's, or a second copy of the package, takes the general path, slower and just
 * as safe.
 */
import type { ClientBase, QueryResult } from "pg";
import { kindOf } from "../arguments.js";
import { FenceError } from "../errors.js";
import type { FenceWrite } from "../store.js";

/** One statement of a write given as data: its text, and its parameters ($1, $2, …) if it has any. */
export type SqlStatement = string | { readonly text: string; readonly values?: readonly unknown[] };

/** A statement as the store sends it. */
export interface CheckedStatement {
  readonly text: string;
  readonly values: unknown[] | undefined;
}

/** What sqlStatements() returns: a write whose result is every statement's pg result, in order. */
export type SqlStatementsWrite = FenceWrite<ClientBase, Promise<QueryResult[]>>;

const STATEMENTS = Symbol("the checked statements of a sqlStatements() write");

/**
 * The write that runs `statements` in the fenced transaction, in order, and resolves with their
 * results. Each is checked now (a non-empty text, values an array if given): FENCE_BAD_ARGUMENT
 * otherwise, before any store sees it. Do not COMMIT or ROLLBACK among them.
 */
export function sqlStatements(...statements: SqlStatement[]): SqlStatementsWrite {
  const checked = statements.map(checkStatement);
  // Called as a plain write (a client not in pipeline mode, or through a wrapper): one statement at
  // a time on tx, as a write function would run them.
  const write: SqlStatementsWrite = async (tx) => {
    const results: QueryResult[] = [];
    for (const { text, values } of checked) results.push(await tx.query(text, values));
    return results;
  };
  return Object.assign(write, { [STATEMENTS]: Object.freeze(checked) });
}

/** The checked statements of a write made by sqlStatements(), or undefined for any other write. */
export function statementsOf(write: unknown): readonly CheckedStatement[] | undefined {
  return typeof write === "function"
    ? (write as { [STATEMENTS]?: readonly CheckedStatement[] })[STATEMENTS]
    : undefined;
}

function checkStatement(statement: SqlStatement): CheckedStatement {
  const { text, values } =
    typeof statement === "string" ? { text: statement, values: undefined } : (statement ?? {});
  if (typeof text !== "string" || text.trim() === "" || (values !== undefined && !Array.isArray(values))) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `sqlStatements() takes statements as "text" or { text, values: [...] }, got ${kindOf(statement)}`,
    );
  }
  // A copy: the caller's array may change before the write runs.
  return { text, values: values === undefined ? undefined : [...values] };
}
