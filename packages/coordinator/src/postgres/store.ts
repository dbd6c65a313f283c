import type {
  CoordinationStore,
  LeaseInfo,
  LeaseOutcome,
  OwnershipLease,
  VersionedDocument,
} from "@lock/server";
import pg from "pg";
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_WATCH_RESYNC_MS, withDeadline } from "../deadline.js";
import { unavailable } from "../errors.js";
import { type CoordinationSql, coordinationSql, DEFAULT_SCHEMA } from "./schema.js";
import { DocumentListener } from "./watch.js";

/** The store's pool size unless set: it makes a few calls a second at most (never on the data path). */
export const DEFAULT_POOL_SIZE = 2;

export interface PostgresStoreOptions {
  /** A `pg` connection string (`postgres://user@host:port/db?sslmode=…`). */
  readonly connectionString: string;
  /** The schema of the tables (created if absent; default `lock_coordination`). */
  readonly schema?: string | undefined;
  /** The password, when it is not in the connection string (read from a file or the environment). */
  readonly password?: string | undefined;
  /** TLS material (PEM contents) for `ssl`; the connection string's `sslmode` applies otherwise. */
  readonly ssl?: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer } | undefined;
  /** How long one call may take before it rejects with CoordinatorUnavailableError (default 2000 ms). */
  readonly callTimeoutMs?: number | undefined;
  /** Connections in the pool (default 2), plus one for the watches' LISTEN while any watch runs. */
  readonly poolSize?: number | undefined;
  /** What `description` says: the URL without credentials (default: host, port and database). */
  readonly description?: string | undefined;
  /**
   * How often the watches check their connection and read every watched document again, in case a
   * notification was lost with a connection that died in silence (default 10000 ms).
   */
  readonly watchResyncMs?: number | undefined;
}

/**
 * The contract on PostgreSQL: one schema with the epoch counter (one row, advanced by
 * `GREATEST(value, atLeast) + 1` in one statement), the leases (expiry by the database's own clock,
 * `clock_timestamp()`; the handle is a number from a sequence, new whenever the lease is taken
 * afresh, kept when its holder acquires its live lease again) and the
 * documents (a version column, compare-and-set by `WHERE version = expected`, a NOTIFY on every
 * write). The tables are created on first use if absent.
 */
export class PostgresCoordinationStore implements CoordinationStore {
  readonly description: string;
  readonly #pool: pg.Pool;
  readonly #sql: CoordinationSql;
  readonly #schema: string;
  readonly #timeoutMs: number;
  readonly #listener: DocumentListener;
  #created: Promise<void> | undefined;

  constructor(options: PostgresStoreOptions) {
    this.#schema = options.schema ?? DEFAULT_SCHEMA;
    this.#sql = coordinationSql(this.#schema);
    this.#timeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const config: pg.ClientConfig = {
      connectionString: options.connectionString,
      connectionTimeoutMillis: this.#timeoutMs,
      query_timeout: this.#timeoutMs,
      // Names the sessions by schema: an operator (or a test) can tell whose they are in pg_stat_activity.
      application_name: `lockd-coordinator:${this.#schema}`,
    };
    if (options.password !== undefined) config.password = options.password;
    if (options.ssl !== undefined) config.ssl = { ...options.ssl };
    this.#pool = new pg.Pool({
      ...config,
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      idleTimeoutMillis: 30_000,
    });
    // A pooled connection that dies while idle (a restart, pg_terminate_backend) is dropped by the
    // pool; the next call opens a new one. Without a listener the error would crash the process.
    this.#pool.on("error", () => {});
    const target = new URL(options.connectionString);
    this.description =
      options.description ??
      `postgres ${target.hostname}:${target.port || "5432"}${target.pathname} schema ${this.#schema}`;
    this.#listener = new DocumentListener({
      config,
      channel: this.#sql.channel,
      resyncMs: options.watchResyncMs ?? DEFAULT_WATCH_RESYNC_MS,
      read: (name) => this.readDocument(name),
    });
  }

  takeEpoch(atLeast: bigint): Promise<bigint> {
    return this.#call("takeEpoch", async (client) => {
      const { rows } = await client.query<{ value: string }>(this.#sql.takeEpoch, [String(atLeast)]);
      return BigInt(rows[0]!.value);
    });
  }

  readEpoch(): Promise<bigint> {
    return this.#call("readEpoch", async (client) => {
      const { rows } = await client.query<{ value: string }>(this.#sql.readEpoch);
      return BigInt(rows[0]?.value ?? "0");
    });
  }

  acquireLease(cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome> {
    return this.#call("acquireLease", async (client) => {
      const { rows } = await client.query<{ handle: string | null; holder: string | null }>(
        this.#sql.acquireLease,
        [cluster, holder, Math.ceil(ttlMs)],
      );
      const { handle, holder: current } = rows[0]!;
      if (handle === null) return { held: false, holder: current ?? undefined };
      return { held: true, lease: { cluster, holder, ttlMs, handle } };
    });
  }

  renewLease(lease: OwnershipLease): Promise<LeaseOutcome> {
    return this.#call("renewLease", async (client) => {
      const { rows } = await client.query<{ handle: string | null; holder: string | null }>(
        this.#sql.renewLease,
        [lease.cluster, lease.handle, Math.ceil(lease.ttlMs)],
      );
      const { handle, holder } = rows[0]!;
      return handle === null ? { held: false, holder: holder ?? undefined } : { held: true, lease };
    });
  }

  releaseLease(lease: OwnershipLease): Promise<void> {
    return this.#call("releaseLease", async (client) => {
      await client.query(this.#sql.releaseLease, [lease.cluster, lease.handle]);
    });
  }

  readLease(cluster: string): Promise<LeaseInfo | undefined> {
    return this.#call("readLease", async (client) => {
      const { rows } = await client.query<{ holder: string; remaining_ms: number }>(this.#sql.readLease, [
        cluster,
      ]);
      const row = rows[0];
      return row && { holder: row.holder, remainingMs: row.remaining_ms };
    });
  }

  readDocument(name: string): Promise<VersionedDocument | undefined> {
    return this.#call("readDocument", async (client) => {
      const { rows } = await client.query<{ value: string; version: string }>(this.#sql.readDocument, [name]);
      const row = rows[0];
      return row && { value: row.value, version: BigInt(row.version) };
    });
  }

  writeDocument(name: string, value: string, expectedVersion: bigint): Promise<bigint | undefined> {
    return this.#call("writeDocument", async (client) => {
      const { rows } =
        expectedVersion === 0n
          ? await client.query<{ version: string }>(this.#sql.createDocument, [
              name,
              value,
              this.#sql.channel,
            ])
          : await client.query<{ version: string }>(this.#sql.updateDocument, [
              name,
              value,
              this.#sql.channel,
              String(expectedVersion),
            ]);
      return rows[0] && BigInt(rows[0].version);
    });
  }

  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    return this.#listener.watch(name, onChange);
  }

  async close(): Promise<void> {
    await this.#listener.close();
    await this.#pool.end().catch(() => {});
  }

  /** Creates the schema on first use (again after a failed attempt). */
  #ensureCreated(): Promise<void> {
    this.#created ??= (async () => {
      const client = await this.#pool.connect();
      let failure: Error | undefined;
      try {
        await client.query("BEGIN");
        const [lock, ...statements] = this.#sql.create;
        await client.query(lock!, [this.#schema]);
        for (const statement of statements) await client.query(statement);
        await client.query("COMMIT");
      } catch (error) {
        failure = error as Error;
        throw error;
      } finally {
        // A failed creation's connection is discarded (its transaction rolls back with it).
        client.release(failure);
      }
    })().catch((error: unknown) => {
      this.#created = undefined;
      throw error;
    });
    return this.#created;
  }

  /** Runs one operation under the call timeout; any failure becomes CoordinatorUnavailableError. */
  async #call<T>(what: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await withDeadline(this.#onConnection(work), this.#timeoutMs, what);
    } catch (error) {
      throw unavailable(this.description, what, error);
    }
  }

  async #onConnection<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.#ensureCreated();
    const client = await this.#pool.connect();
    let failure: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      failure = error as Error;
      throw error;
    } finally {
      // A connection whose statement failed or timed out is closed, not reused: its state is unknown.
      client.release(failure);
    }
  }
}
