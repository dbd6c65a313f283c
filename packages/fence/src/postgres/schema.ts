/**
 * The fence table: one row per resource holding the highest accepted token. The same SQL ships as
 * sql/fence-table.sql for migration tools; a test keeps the file equal to fenceTableSql().
 */
import { assertQueryable } from "../arguments.js";
import type { Queryable } from "./queryable.js";
import { quoteIdentifier, quoteQualifiedName } from "./sql.js";

export const DEFAULT_FENCE_TABLE = "lock_fence";

/**
 * The statements that create the fence table `table` ("name" or "schema.name"; validated and quoted),
 * or bring one created by an earlier version up to date: CREATE TABLE IF NOT EXISTS, then two ALTERs
 * that change nothing on a table that is already current (they take the table's lock for a moment).
 *
 * Tokens are u64 but Postgres bigint is signed 64-bit, so the columns are numeric(20,0), bounded by a
 * CHECK to the u64 range, and compared numerically. `token` is the highest accepted write (NULL for a
 * resource that has only been read), `read_token` the highest read recorded since (fenceRead()).
 */
export function fenceTableSql(table: string = DEFAULT_FENCE_TABLE): string {
  const name = quoteQualifiedName(table);
  const readToken = "read_token numeric(20, 0) CHECK (read_token BETWEEN 0 AND 18446744073709551615)";
  return `CREATE TABLE IF NOT EXISTS ${name} (
  resource text PRIMARY KEY,
  token numeric(20, 0) CHECK (token BETWEEN 0 AND 18446744073709551615),
  ${readToken},
  updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE ${name} ALTER COLUMN token DROP NOT NULL;
ALTER TABLE ${name} ADD COLUMN IF NOT EXISTS ${readToken};
`;
}

/** fenceTableSql() for the default table name, identical to sql/fence-table.sql without its comments. */
export const FENCE_TABLE_SQL: string = fenceTableSql();

/**
 * Creates the fence table if it does not exist, or brings it up to date (fenceTableSql()). Run it at
 * deploy time, like any migration.
 */
export async function createFenceTable(db: Queryable, table: string = DEFAULT_FENCE_TABLE): Promise<void> {
  assertQueryable(db, "createFenceTable()");
  await db.query(fenceTableSql(table));
}

/**
 * For fenceRow(): adds the token column to a table you already have. NULL means "never fenced", so
 * existing rows accept their first token.
 */
export function fenceColumnSql(table: string, column = "fence_token"): string {
  const name = quoteIdentifier(column);
  return `ALTER TABLE ${quoteQualifiedName(table)} ADD COLUMN IF NOT EXISTS ${name} numeric(20, 0) CHECK (${name} BETWEEN 0 AND 18446744073709551615);
`;
}
