/**
 * The write guard as a statement each connection prepares once (SQL PREPARE) and then only runs
 * (EXECUTE): Postgres parses and plans the upsert once per connection instead of on every fenced write.
 * Measured side by side, that was about a third of what fencing added to a BEGIN; UPDATE; COMMIT.
 *
 * Why SQL PREPARE and not pg's named statements: the guard rides in one simple query with BEGIN (one
 * round trip), and a simple query cannot use the extended protocol's statements; PREPARE and EXECUTE
 * are plain SQL, so they can. EXECUTE's arguments are literals, made as the unprepared guard's are
 * (guard.ts).
 *
 * The PREPARE goes in the same query as the connection's first EXECUTE, after the scope's opening:
 * whatever fails, it fails inside the transaction (or savepoint), which the store then rolls back.
 * A prepared statement is the session's, kept across commits and rollbacks, until the connection ends
 * (one per fence table and kind of guard). This module remembers, per connection, which it sent; when
 * that memory is wrong, the server says so and recoverPreparedGuard() corrects it:
 *
 * - EXECUTE of a statement the session does not have (26000: DISCARD ALL, DEALLOCATE, a pooler that
 *   moves the session to another server connection): the connection gets the unprepared guard from
 *   then on, so a pooler cannot make every call fail once.
 * - PREPARE of a name the session has (42P05: another copy of this package on the connection, or a
 *   PREPARE that ran in a call that then failed): it is there, so the next call only EXECUTEs.
 * - Any other failure of a query that carried a PREPARE: whether it ran is unknown, so the next call
 *   sends it again (42P05 then tells).
 */
import { createHash } from "node:crypto";
import { raisedRefusal, type WriteRefusal, writeUpsert } from "./guard.js";
import { quoteLiteral } from "./sql.js";

/** The guards prepared on each connection, by statement name. */
const preparedOn = new WeakMap<object, Set<string>>();
/** Connections that lost a prepared guard once: the unprepared guard, from then on. */
const unprepared = new WeakSet<object>();

// SQLSTATEs of EXECUTE without its statement, and of PREPARE of a name already taken.
const INVALID_SQL_STATEMENT_NAME = "26000";
const DUPLICATE_PREPARED_STATEMENT = "42P05";

/** The PREPARE of each table's guards, by table and refusal: names are hashes of their SQL. */
const statements = new Map<string, { name: string; prepare: string }>();

function statementFor(table: string, refusal: WriteRefusal): { name: string; prepare: string } {
  const key = `${refusal} ${table}`;
  const known = statements.get(key);
  if (known) return known;
  const upsert = writeUpsert(table, "$1", "$2", refusal);
  const name = `lock_fence_${createHash("sha1").update(upsert).digest("hex").slice(0, 20)}`;
  const statement = { name, prepare: `PREPARE ${name} (text, numeric) AS ${upsert}` };
  statements.set(key, statement);
  return statement;
}

/**
 * The write guard's statements for `client`, to send after its scope's opening: EXECUTE of the
 * prepared guard, preceded by its PREPARE on the connection's first call; the unprepared upsert on a
 * connection that lost one. The guard's result is the last.
 */
export function preparedWriteGuard(
  client: object,
  table: string,
  resource: string,
  token: bigint,
  refusal: WriteRefusal,
): string {
  if (unprepared.has(client)) return writeUpsert(table, quoteLiteral(resource), token.toString(), refusal);
  const { name, prepare } = statementFor(table, refusal);
  const prepared = preparedOn.get(client) ?? new Set<string>();
  preparedOn.set(client, prepared);
  const execute = `EXECUTE ${name} (${quoteLiteral(resource)}, ${token.toString()})`;
  if (prepared.has(name)) return execute;
  prepared.add(name);
  return `${prepare}; ${execute}`;
}

/**
 * After a preparedWriteGuard() query for `table` failed with `error`: corrects what this module knows
 * of the connection's prepared guards, and says whether the failure was only that (26000, 42P05). Then
 * nothing of the guard ran: the caller rolls back its scope and sends the guard again, once.
 */
export function recoverPreparedGuard(
  client: object,
  table: string,
  refusal: WriteRefusal,
  error: unknown,
): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const { name } = statementFor(table, refusal);
  if (code === INVALID_SQL_STATEMENT_NAME) {
    unprepared.add(client);
    return true;
  }
  if (code === DUPLICATE_PREPARED_STATEMENT) {
    preparedOn.get(client)?.add(name);
    return true;
  }
  // A refusal by error comes from EXECUTE, so its PREPARE ran; of any other failure, that is unknown.
  if (raisedRefusal(error) === undefined) preparedOn.get(client)?.delete(name);
  return false;
}
