import type { VersionedDocument } from "@lock/server";
import { type EtcdGateway, fromBase64, type KeyValue } from "./gateway.js";

interface WatchMessage {
  readonly result?: {
    readonly canceled?: boolean;
    readonly compact_revision?: string;
    readonly events?: ReadonlyArray<{ readonly type?: "PUT" | "DELETE"; readonly kv?: KeyValue }>;
  };
  readonly error?: unknown;
}

/** The pause before a watch whose stream broke reads and watches again; doubles up to the maximum. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

/**
 * One document's watch on etcd: read the key (its state and the store's revision R), deliver it,
 * then stream every event from R + 1 in revision order. A broken stream (a member died, a
 * compaction) starts over with a read, so a change made while no stream was open is still seen;
 * only revisions above the last one delivered are delivered, so nothing comes twice or out of order.
 * A stream can also die in silence (a member cut off without a reset): every `resyncMs` the watch
 * reads the key again, and if that finds a change the stream did not bring, it delivers it and
 * starts a new stream.
 */
export class DocumentWatch {
  readonly #gateway: EtcdGateway;
  readonly #key: string;
  readonly #timeoutMs: number;
  readonly #resyncMs: number;
  readonly #onChange: (document: VersionedDocument | undefined) => void;
  /** The revision of the state last delivered; -1 before the first delivery. */
  #delivered = -1n;
  #stopStream: (() => void) | undefined;
  #retry: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #stopped = false;
  /** Whether the state last delivered was a document (a delete is delivered once, after one). */
  #lastWasPresent = false;

  constructor(
    gateway: EtcdGateway,
    key: string,
    timeoutMs: number,
    resyncMs: number,
    onChange: (document: VersionedDocument | undefined) => void,
  ) {
    this.#gateway = gateway;
    this.#key = key;
    this.#timeoutMs = timeoutMs;
    this.#resyncMs = resyncMs;
    this.#onChange = onChange;
  }

  start(): void {
    void this.#readThenStream().catch(() => this.#again());
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retry);
    clearTimeout(this.#resync);
    this.#stopStream?.();
  }

  async #readThenStream(): Promise<void> {
    const { revision } = await this.#read();
    if (this.#stopped) return;
    this.#stopStream = this.#gateway.stream(
      "/v3/watch",
      { create_request: { key: this.#key, start_revision: String(revision + 1n) } },
      this.#timeoutMs,
      (message) => this.#onMessage(message as WatchMessage),
      () => this.#again(),
    );
    this.#scheduleResync();
  }

  /**
   * Reads the key and delivers its state if it is new: the store's revision at the read, and whether
   * the read delivered something.
   */
  async #read(): Promise<{ revision: bigint; delivered: boolean }> {
    const answer = await this.#gateway.call<{ header?: { revision?: string }; kvs?: KeyValue[] }>(
      "/v3/kv/range",
      { key: this.#key },
      performance.now() + this.#timeoutMs,
    );
    const revision = BigInt(answer.header?.revision ?? "0");
    if (this.#stopped) return { revision, delivered: false };
    const current = answer.kvs?.[0];
    let delivered: boolean;
    if (current) delivered = this.#deliver(BigInt(current.mod_revision ?? "0"), current);
    else if (this.#delivered < 0n) delivered = this.#deliver(0n, undefined);
    else delivered = this.#deliverDeleteIfNew(revision);
    return { revision, delivered };
  }

  #scheduleResync(): void {
    clearTimeout(this.#resync);
    if (this.#stopped) return;
    this.#resync = setTimeout(() => {
      this.#read().then(
        ({ delivered }) => {
          if (this.#stopped) return;
          if (!delivered) return this.#scheduleResync();
          // The read saw what the stream did not: the stream is stale. Start over.
          this.#stopStream?.();
          this.#again();
        },
        () => this.#scheduleResync(), // the store did not answer: the stream, if alive, still may
      );
    }, this.#resyncMs);
  }

  #onMessage(message: WatchMessage): void {
    if (this.#stopped) return;
    const result = message.result;
    if (message.error !== undefined || result?.canceled || result?.compact_revision) {
      this.#stopStream?.();
      this.#again();
      return;
    }
    this.#retryMs = RETRY_FIRST_MS; // a live stream: the next break retries quickly
    for (const event of result?.events ?? []) {
      const revision = BigInt(event.kv?.mod_revision ?? "0");
      if (event.type === "DELETE") this.#deliverDeleteIfNew(revision);
      else if (event.kv) this.#deliver(revision, event.kv);
    }
  }

  /** A read found no key after a delivered state: it was deleted meanwhile (at most at `revision`). */
  #deliverDeleteIfNew(revision: bigint): boolean {
    if (revision <= this.#delivered || !this.#lastWasPresent) return false;
    this.#delivered = revision;
    this.#lastWasPresent = false;
    this.#onChange(undefined);
    return true;
  }

  #deliver(revision: bigint, kv: KeyValue | undefined): boolean {
    if (revision <= this.#delivered) return false;
    this.#delivered = revision;
    this.#lastWasPresent = kv !== undefined;
    this.#onChange(kv && { value: fromBase64(kv.value), version: revision });
    return true;
  }

  #again(): void {
    if (this.#stopped || this.#retry) return;
    clearTimeout(this.#resync);
    this.#stopStream = undefined;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#readThenStream().catch(() => this.#again());
    }, this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }
}
