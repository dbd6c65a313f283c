import type { VersionedDocument } from "@lock/server";
import pg from "pg";

interface Watcher {
  readonly onChange: (document: VersionedDocument | undefined) => void;
  /** The version last delivered; -1 before the first delivery (which always happens). */
  delivered: bigint;
}

export interface DocumentListenerOptions {
  readonly config: pg.ClientConfig;
  readonly channel: string;
  /** How often every watched document is read again and the connection checked, while listening. */
  readonly resyncMs: number;
  /** Reads a document's current state (through the store's pool, under its call timeout). */
  readonly read: (name: string) => Promise<VersionedDocument | undefined>;
}

/** The pause before the listening connection is opened again after it broke; doubles up to the maximum. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

/**
 * The documents' watches on PostgreSQL: one connection LISTENs on the store's channel while any
 * watch runs; a write NOTIFYs the document's name when it commits.
 *
 * A notification carries no state: it only says "read `name` again". Every delivery comes from a
 * fresh read of the row, and is made only if its version is above the last one delivered. So a
 * notification missed while the connection was down cannot lose a change: the connection, once
 * back, LISTENs first and then reads every watched document again, which returns the latest state
 * whatever happened meanwhile. Changes that follow each other faster than a read may be delivered
 * as one (the latest); versions delivered always increase. A connection can also die in silence
 * (cut off without a reset): every `resyncMs` the listener checks it (`SELECT 1`, under the call
 * timeout) and reads every watched document again.
 */
export class DocumentListener {
  readonly #options: DocumentListenerOptions;
  readonly #watchers = new Map<string, Set<Watcher>>();
  /** Reads per document run one after another, so deliveries stay in version order. */
  readonly #reading = new Map<string, Promise<void>>();
  #client: pg.Client | undefined;
  #listening = false;
  #retry: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #closed = false;

  constructor(options: DocumentListenerOptions) {
    this.#options = options;
  }

  watch(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    const watcher: Watcher = { onChange, delivered: -1n };
    const watchers = this.#watchers.get(name) ?? new Set<Watcher>();
    this.#watchers.set(name, watchers);
    watchers.add(watcher);
    if (this.#listening) this.#refresh(name);
    else if (!this.#client) this.#connect();
    return () => {
      if (!watchers.delete(watcher)) return; // stopped already
      if (watchers.size === 0 && this.#watchers.get(name) === watchers) this.#watchers.delete(name);
      if (this.#watchers.size === 0) void this.#disconnect();
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watchers.clear();
    await this.#disconnect();
  }

  #connect(): void {
    if (this.#closed || this.#client) return;
    const client = new pg.Client(this.#options.config);
    this.#client = client;
    const broken = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#listening = false;
      clearTimeout(this.#resync);
      client.end().catch(() => {});
      this.#again();
    };
    client.on("error", broken);
    client.on("end", broken);
    client.on("notification", (message) => {
      if (message.channel === this.#options.channel && message.payload) this.#refresh(message.payload);
    });
    client
      .connect()
      .then(() => client.query(`LISTEN "${this.#options.channel}"`))
      .then(() => {
        if (this.#client !== client) return;
        this.#listening = true;
        this.#retryMs = RETRY_FIRST_MS;
        // LISTEN first, read second: a write after this read notifies; one before it is in the read.
        for (const name of this.#watchers.keys()) this.#refresh(name);
        this.#scheduleResync(client, broken);
      })
      .catch(broken);
  }

  #scheduleResync(client: pg.Client, broken: () => void): void {
    this.#resync = setTimeout(() => {
      if (this.#client !== client) return;
      client.query("SELECT 1").then(() => {
        if (this.#client !== client) return;
        for (const name of this.#watchers.keys()) this.#refresh(name);
        this.#scheduleResync(client, broken);
      }, broken);
    }, this.#options.resyncMs);
  }

  #again(): void {
    if (this.#closed || this.#retry || this.#watchers.size === 0) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#connect();
    }, this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  async #disconnect(): Promise<void> {
    clearTimeout(this.#retry);
    clearTimeout(this.#resync);
    this.#retry = undefined;
    const client = this.#client;
    this.#client = undefined;
    this.#listening = false;
    await client?.end().catch(() => {});
  }

  /** Reads `name` again and delivers it to each watcher that has not seen that version. */
  #refresh(name: string): void {
    const previous = this.#reading.get(name) ?? Promise.resolve();
    const next = previous.then(async () => {
      let document: VersionedDocument | undefined;
      try {
        document = await this.#options.read(name);
      } catch {
        // The database is unreachable: start over with a new connection, which reads everything again.
        const client = this.#client;
        if (client) client.emit("error", new Error("a watched document could not be read"));
        return;
      }
      for (const watcher of this.#watchers.get(name) ?? []) {
        const version = document?.version ?? 0n;
        if (version > watcher.delivered) {
          watcher.delivered = version;
          try {
            watcher.onChange(document);
          } catch (error) {
            // The watcher's own bug: thrown where the etcd watch would throw it (an uncaught
            // exception), without stopping this document's later reads.
            process.nextTick(() => {
              throw error;
            });
          }
        }
      }
    });
    this.#reading.set(name, next);
    void next.finally(() => {
      if (this.#reading.get(name) === next) this.#reading.delete(name);
    });
  }
}
