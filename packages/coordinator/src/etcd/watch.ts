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
 */
export class DocumentWatch {
  readonly #gateway: EtcdGateway;
  readonly #key: string;
  readonly #timeoutMs: number;
  readonly #onChange: (document: VersionedDocument | undefined) => void;
  /** The revision of the state last delivered; -1 before the first delivery. */
  #delivered = -1n;
  #stopStream: (() => void) | undefined;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #stopped = false;
  /** Whether the state last delivered was a document (a delete is delivered once, after one). */
  #lastWasPresent = false;

  constructor(
    gateway: EtcdGateway,
    key: string,
    timeoutMs: number,
    onChange: (document: VersionedDocument | undefined) => void,
  ) {
    this.#gateway = gateway;
    this.#key = key;
    this.#timeoutMs = timeoutMs;
    this.#onChange = onChange;
  }

  start(): void {
    void this.#readThenStream().catch(() => this.#again());
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#stopStream?.();
  }

  async #readThenStream(): Promise<void> {
    const answer = await this.#gateway.call<{ header?: { revision?: string }; kvs?: KeyValue[] }>(
      "/v3/kv/range",
      { key: this.#key },
      performance.now() + this.#timeoutMs,
    );
    if (this.#stopped) return;
    const current = answer.kvs?.[0];
    const revision = BigInt(answer.header?.revision ?? "0");
    if (current) this.#deliver(BigInt(current.mod_revision ?? "0"), current);
    else if (this.#delivered < 0n) this.#deliver(0n, undefined);
    else this.#deliverDeleteIfNew(revision);
    this.#stopStream = this.#gateway.stream(
      "/v3/watch",
      { create_request: { key: this.#key, start_revision: String(revision + 1n) } },
      this.#timeoutMs,
      (message) => this.#onMessage(message as WatchMessage),
      () => this.#again(),
    );
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
  #deliverDeleteIfNew(revision: bigint): void {
    if (revision > this.#delivered && this.#lastWasPresent) {
      this.#delivered = revision;
      this.#lastWasPresent = false;
      this.#onChange(undefined);
    }
  }

  #deliver(revision: bigint, kv: KeyValue | undefined): void {
    if (revision <= this.#delivered) return;
    this.#delivered = revision;
    this.#lastWasPresent = kv !== undefined;
    this.#onChange(kv && { value: fromBase64(kv.value), version: revision });
  }

  #again(): void {
    if (this.#stopped || this.#retry) return;
    this.#stopStream = undefined;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#readThenStream().catch(() => this.#again());
    }, this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }
}
