import { CoordinatorUrlError } from "../errors.js";

/** The schema that holds the coordination tables unless `?schema=` (or the option) names another. */
export const DEFAULT_SCHEMA = "lock_coordination";

/**
 * A schema name is put into SQL text (identifiers cannot be parameters), so only plain lower-case
 * names are accepted; 48 characters leave room for the notification channel's suffix within
 * PostgreSQL's 63.
 */
const SAFE_IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

export function checkSchemaName(schema: string): string {
  if (!SAFE_IDENTIFIER.test(schema)) {
    throw new CoordinatorUrlError(
      `schema ${JSON.stringify(schema)} is not a plain lower-case identifier (a-z, 0-9, _; at most 48 characters)`,
    );
  }
  return schema;
}

/** The SQL of one store, for its (checked) schema. */
export function coordinationSql(schema: string) {
  const s = `"${checkSchemaName(schema)}"`;
  const expiry = "clock_timestamp() + $3::bigint * interval '1 millisecond'";
  /** In an upsert: the row is the incoming holder's own, and has not expired. */
  const ownLive = "l.holder = excluded.holder AND l.expires_at > clock_timestamp()";
  const liveHolder = `(SELECT holder FROM ${s}.leases WHERE cluster = $1 AND expires_at > clock_timestamp())`;
  return {
    /** The channel a document write notifies, with the document's name as its payload. */
    channel: `${schema}_documents`,
    /** Idempotent; run under an advisory lock so that stores starting together do not race on the catalog. */
    create: [
      `SELECT pg_advisory_xact_lock(hashtext('lock-coordination:' || $1::text))`,
      `CREATE SCHEMA IF NOT EXISTS ${s}`,
      `CREATE TABLE IF NOT EXISTS ${s}.epoch (
         singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), value bigint NOT NULL)`,
      `CREATE SEQUENCE IF NOT EXISTS ${s}.lease_handles`,
      `CREATE TABLE IF NOT EXISTS ${s}.leases (
         cluster text PRIMARY KEY, holder text NOT NULL, handle bigint NOT NULL, expires_at timestamptz NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${s}.documents (name text PRIMARY KEY, value text NOT NULL, version bigint NOT NULL)`,
    ],
    takeEpoch: `INSERT INTO ${s}.epoch (singleton, value) VALUES (true, $1::bigint + 1)
      ON CONFLICT (singleton) DO UPDATE SET value = GREATEST(${s}.epoch.value, $1::bigint) + 1
      RETURNING value`,
    readEpoch: `SELECT value FROM ${s}.epoch`,
    /**
     * $1 cluster, $2 holder, $3 ttl ms: takes the lease (a new handle) if it is free or expired;
     * extends the holder's own live lease, same handle, never shortening it.
     */
    acquireLease: `WITH taken AS (
        INSERT INTO ${s}.leases AS l (cluster, holder, handle, expires_at)
        VALUES ($1, $2, nextval('${s}.lease_handles'), ${expiry})
        ON CONFLICT (cluster) DO UPDATE SET holder = excluded.holder,
          handle = CASE WHEN ${ownLive} THEN l.handle ELSE excluded.handle END,
          expires_at = CASE WHEN ${ownLive} THEN GREATEST(l.expires_at, excluded.expires_at)
            ELSE excluded.expires_at END
        WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
        RETURNING handle)
      SELECT (SELECT handle FROM taken) AS handle, ${liveHolder} AS holder`,
    /** $1 cluster, $2 handle, $3 ttl ms: extends the lease only if it is this incarnation's and live. */
    renewLease: `WITH renewed AS (
        UPDATE ${s}.leases SET expires_at = ${expiry}
        WHERE cluster = $1 AND handle = $2 AND expires_at > clock_timestamp()
        RETURNING handle)
      SELECT (SELECT handle FROM renewed) AS handle, ${liveHolder} AS holder`,
    releaseLease: `DELETE FROM ${s}.leases WHERE cluster = $1 AND handle = $2`,
    readLease: `SELECT holder,
        GREATEST(0, floor(extract(epoch FROM expires_at - clock_timestamp()) * 1000))::float8 AS remaining_ms
      FROM ${s}.leases WHERE cluster = $1 AND expires_at > clock_timestamp()`,
    readDocument: `SELECT value, version FROM ${s}.documents WHERE name = $1`,
    /** $1 name, $2 value, $3 channel. */
    createDocument: `WITH written AS (
        INSERT INTO ${s}.documents (name, value, version) VALUES ($1, $2, 1)
        ON CONFLICT (name) DO NOTHING RETURNING version)
      SELECT version, pg_notify($3, $1) FROM written`,
    /** $1 name, $2 value, $3 channel, $4 expected version. */
    updateDocument: `WITH written AS (
        UPDATE ${s}.documents SET value = $2, version = version + 1
        WHERE name = $1 AND version = $4 RETURNING version)
      SELECT version, pg_notify($3, $1) FROM written`,
  };
}

export type CoordinationSql = ReturnType<typeof coordinationSql>;
