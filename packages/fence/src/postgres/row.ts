/**
 * Fencing a column on the protected row itself, for tables that should carry their own token instead
 * of a row in the fence table: one UPDATE that only matches when the row's token is not higher.
 */
import { assertOptions, assertQueryable } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { type FencingTokenInput, parseToken } from "../token.js";
import type { Queryable } from "./queryable.js";
import { quoteIdentifier, quoteQualifiedName } from "./sql.js";

export interface FenceRowOptions {
  /** "table" or "schema.table". */
  table: string;
  /** Equality on every column, identifying the row (normally its primary key), e.g. `{ id: 42 }`. */
  key: Readonly<Record<string, unknown>>;
  /** Column values to write, e.g. `{ status: "paid" }`. May be empty to only advance the token. */
  set: Readonly<Record<string, unknown>>;
  token: FencingTokenInput;
  /** A numeric(20,0) column (see fenceColumnSql). Default "fence_token". */
  tokenColumn?: string;
}

/**
 * Runs, as one statement:
 *
 *   UPDATE table SET <set...>, fence_token = $token
 *   WHERE <key...> AND (fence_token IS NULL OR fence_token <= $token)
 *
 * Returns the number of rows written (at least 1). When nothing matched, a second query tells why:
 * FenceError FENCE_ROW_MISSING if no row has the key, StaleTokenError if the row holds a higher token.
 * Nothing is written in either case. The check and the write are one UPDATE, so they are atomic on their
 * own; pass the transaction client from fence() or your own BEGIN to group it with other statements.
 */
export async function fenceRow(db: Queryable, options: FenceRowOptions): Promise<number> {
  assertQueryable(db, "fenceRow()");
  assertOptions(options, "fenceRow()", "options: { table, key, set, token }");
  for (const field of ["key", "set"] as const) {
    assertOptions(options[field], `fenceRow(): \`${field}\``, "an object of column values");
  }
  const token = parseToken(options.token);
  const table = quoteQualifiedName(options.table);
  const tokenColumn = quoteIdentifier(options.tokenColumn ?? "fence_token");
  const keyEntries = Object.entries(options.key);
  const setEntries = Object.entries(options.set);
  if (keyEntries.length === 0 || keyEntries.some(([, value]) => value === null || value === undefined)) {
    // An empty key would update the whole table; a NULL never equals anything in SQL.
    throw new FenceError("FENCE_BAD_OPTIONS", "fenceRow() needs a key of non-null column values");
  }
  if (setEntries.some(([column]) => quoteIdentifier(column) === tokenColumn)) {
    throw new FenceError(
      "FENCE_BAD_OPTIONS",
      "fenceRow() sets the token column itself; leave it out of `set`",
    );
  }

  const setColumns = setEntries.map(([column]) => quoteIdentifier(column));
  const keyColumns = keyEntries.map(([column]) => quoteIdentifier(column));
  const keyValues = keyEntries.map(([, value]) => value);
  const keyMatches = (firstParam: number) =>
    keyColumns.map((column, index) => `${column} = $${firstParam + index}`).join(" AND ");

  // Parameters: $1 the token, then the set values, then the key values.
  const assignments = setColumns.map((column, index) => `${column} = $${index + 2}`);
  assignments.push(`${tokenColumn} = $1::numeric`);
  const updated = await db.query(
    `UPDATE ${table} SET ${assignments.join(", ")} WHERE ${keyMatches(setColumns.length + 2)} ` +
      `AND (${tokenColumn} IS NULL OR ${tokenColumn} <= $1::numeric)`,
    [token.toString(), ...setEntries.map(([, value]) => value), ...keyValues],
  );
  if (updated.rowCount) return updated.rowCount;

  const found = await db.query(
    `SELECT ${tokenColumn}::text AS token FROM ${table} WHERE ${keyMatches(1)} LIMIT 1`,
    keyValues,
  );
  const resource = `${options.table}(${keyEntries.map(([column, value]) => `${column}=${String(value)}`).join(",")})`;
  const row = found.rows[0];
  if (!row) throw new FenceError("FENCE_ROW_MISSING", `no row ${resource} to fence`);
  // Tokens only grow, so the row now holds a higher token than ours. (Should someone reset the column
  // between the two statements, the error still reports what the row holds now.)
  throw new StaleTokenError(resource, token, typeof row.token === "string" ? BigInt(row.token) : 0n);
}
