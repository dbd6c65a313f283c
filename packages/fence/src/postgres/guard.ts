/**
 * The statements that open a fenced call in Postgres: its scope (BEGIN or a SAVEPOINT) and the guard,
 * sent as one simple query, so one round trip. A multi-statement simple query cannot take parameters,
 * so the resource and token are literals, both produced by checkFenceInput(): the token is the text of
 * a bigint (digits only), the resource is escaped like PQescapeLiteral.
 *
 * Both guards leave the resource's fence row locked until the scope ends, so a fenced write and any
 * other fenced call of the resource never overlap, while fenced reads overlap each other:
 *
 * - A write upserts the row (ON CONFLICT DO UPDATE: a FOR UPDATE row lock, taken even when its WHERE
 *   refuses). It waits for every open fenced call of the resource, then decides on the committed marks.
 * - A read takes FOR KEY SHARE, which only a write's lock conflicts with, after inserting the row
 *   when it is missing (so that there is a row to lock). With `record`, an UPDATE first raises the read mark, when the read
 *   is accepted and the mark is lower: a FOR NO KEY UPDATE lock, which conflicts with the write's and
 *   with other raising reads, so reads that raise the mark run one after another. Taking the stronger
 *   lock first means no transaction upgrades a lock it holds: no deadlock with a waiting writer.
 */
import type { FenceMarks } from "../rule.js";
import { quoteLiteral } from "./sql.js";

/** The row's marks as selected by `MARKS_COLUMNS`. */
export interface MarksRow {
  token: string | null;
  read_token: string | null;
}

export const MARKS_COLUMNS = "token::text AS token, read_token::text AS read_token";

export function marksOf(row: MarksRow | undefined): FenceMarks {
  return {
    ...(typeof row?.token === "string" ? { write: BigInt(row.token) } : {}),
    ...(typeof row?.read_token === "string" ? { read: BigInt(row.read_token) } : {}),
  };
}

/**
 * How a write guard refuses a stale token: with zero rows, when nothing of the caller's has been sent
 * yet (the store reads the result before calling the write), or with an error, when statements were
 * sent behind it (the pipelined path of sqlStatements()): then the refusal must abort the transaction,
 * so that Postgres skips those statements (25P02) and COMMIT rolls back.
 */
export type WriteRefusal = "rows" | "error";

/**
 * The write guard's upsert, with `resource` and `token` given as SQL: literals, or $1 and $2 in a
 * prepared statement (prepared-guard.ts). It returns one row when the token is accepted (the read
 * mark is then cleared too).
 *
 * Refusing with an error: the update, with no WHERE, sets the token to the presented one if accepted
 * and otherwise to a text that names the marks, cast to numeric, which fails (22P02) before anything is
 * written. Plain SQL has no function that raises an error, and this needs none installed. The text
 * depends on the row, so Postgres cannot evaluate it when planning (a constant would fail every call).
 * Such a refusal is an ERROR line in the server's log.
 */
export function writeUpsert(table: string, resource: string, token: string, refusal: WriteRefusal): string {
  const accepted = `(fence.token IS NULL OR fence.token <= ${token}) AND (fence.read_token IS NULL OR fence.read_token <= ${token})`;
  const insert = `INSERT INTO ${table} AS fence (resource, token) VALUES (${resource}, ${token}) ON CONFLICT (resource) DO UPDATE SET`;
  if (refusal === "rows") {
    return `${insert} token = excluded.token, read_token = NULL, updated_at = now() WHERE ${accepted} RETURNING 1`;
  }
  const failing = `('${REFUSAL_MARKER} ' || ${token}::text || ' (write mark ' || coalesce(fence.token::text, '') || ', read mark ' || coalesce(fence.read_token::text, '') || ')')::numeric`;
  return `${insert} token = CASE WHEN ${accepted} THEN excluded.token ELSE ${failing} END, read_token = NULL, updated_at = now() RETURNING 1`;
}

const REFUSAL_MARKER = "lock_fence refused token";
// SQLSTATE invalid_text_representation, what the failed cast raises.
const INVALID_TEXT_REPRESENTATION = "22P02";
const REFUSAL = new RegExp(`${REFUSAL_MARKER} \\d+ \\(write mark (\\d*), read mark (\\d*)\\)`);

/**
 * The marks that refused a guard that refuses with an error, read from that error; undefined for any other error.
 * Every translation of the message quotes the text that failed to parse, so the marks are in it.
 */
export function raisedRefusal(error: unknown): FenceMarks | undefined {
  if ((error as { code?: unknown } | null)?.code !== INVALID_TEXT_REPRESENTATION) return undefined;
  const found = REFUSAL.exec(String((error as Error).message));
  if (!found) return undefined;
  const [, write, read] = found;
  return { ...(write ? { write: BigInt(write) } : {}), ...(read ? { read: BigInt(read) } : {}) };
}

/**
 * Raises the read mark if asked, and selects the marks, locked: the last result. Not an INSERT first:
 * ON CONFLICT waits for any transaction that is changing the conflicting row, so reads would wait for
 * a raising read. Only when the row is missing does readGuardInsert() follow.
 */
export function readGuard(table: string, resource: string, token: bigint, record: boolean): string {
  const t = token.toString();
  const name = quoteLiteral(resource);
  const raise = record
    ? `UPDATE ${table} SET read_token = ${t}, updated_at = now() WHERE resource = ${name} ` +
      `AND (token IS NULL OR token <= ${t}) AND (read_token IS NULL OR read_token < ${t}); `
    : "";
  return `${raise}SELECT ${MARKS_COLUMNS} FROM ${table} WHERE resource = ${name} FOR KEY SHARE`;
}

/**
 * For a resource with no row yet: inserts it (an empty row: no write, no read), so that there is a
 * row to lock, then readGuard(). A concurrent first call on the resource waits for this transaction.
 */
export function readGuardInsert(table: string, resource: string, token: bigint, record: boolean): string {
  const insert = `INSERT INTO ${table} (resource) VALUES (${quoteLiteral(resource)}) ON CONFLICT (resource) DO NOTHING`;
  return `${insert}; ${readGuard(table, resource, token, record)}`;
}
