/**
 * SQL text building. Identifiers (table, column names) come from configuration, so they are validated
 * as plain identifiers and always double-quoted; values go in as bound parameters, except in the
 * guard statement (see store.ts), whose resource literal is escaped here.
 */
import { FenceError } from "../errors.js";

// Postgres truncates identifiers longer than NAMEDATALEN-1 = 63 bytes; refuse instead of truncating.
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** `name` as a quoted identifier. Quoting preserves case: "Orders" and "orders" are two tables. */
export function quoteIdentifier(name: string): string {
  if (typeof name !== "string" || !PLAIN_IDENTIFIER.test(name)) {
    throw new FenceError(
      "FENCE_BAD_IDENTIFIER",
      `${JSON.stringify(name)} is not a plain identifier: use letters, digits and _, at most 63, ` +
        "not starting with a digit",
    );
  }
  return `"${name}"`;
}

/** `table` or `schema.table`, each part validated and quoted. */
export function quoteQualifiedName(name: string): string {
  const parts = typeof name === "string" ? name.split(".") : [];
  if (parts.length < 1 || parts.length > 2) {
    throw new FenceError("FENCE_BAD_IDENTIFIER", `${JSON.stringify(name)} is not "table" or "schema.table"`);
  }
  return parts.map(quoteIdentifier).join(".");
}

/**
 * A string literal, escaped like libpq's PQescapeLiteral (and pg's escapeLiteral): quotes doubled, and
 * with backslashes doubled under E'' so the result is right whatever standard_conforming_strings says.
 */
export function quoteLiteral(value: string): string {
  const doubled = value.replaceAll("'", "''");
  if (!value.includes("\\")) return `'${doubled}'`;
  return ` E'${doubled.replaceAll("\\", "\\\\")}'`;
}
