import type {
  CoordinationStore,
  LeaseInfo,
  LeaseOutcome,
  OwnershipLease,
  VersionedDocument,
} from "@lock/server";
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_WATCH_RESYNC_MS } from "../deadline.js";
import { unavailable } from "../errors.js";
import { DEFAULT_ETCD_PREFIX } from "../url.js";
import {
  base64,
  EtcdGateway,
  type EtcdGatewayOptions,
  fromBase64,
  isNotFound,
  type KeyValue,
} from "./gateway.js";
import { DocumentWatch } from "./watch.js";

export interface EtcdStoreOptions extends EtcdGatewayOptions {
  /** Every key this store uses starts with it (default `/lock/`); one prefix per deployment. */
  readonly prefix?: string | undefined;
  /** How long one call may take before it rejects with CoordinatorUnavailableError (default 2000 ms). */
  readonly callTimeoutMs?: number | undefined;
  /** What `description` says: the URL without credentials (default: the endpoints and prefix). */
  readonly description?: string | undefined;
  /** How often a watch reads its document again, in case its stream died in silence (default 10000 ms). */
  readonly watchResyncMs?: number | undefined;
}

interface RangeAnswer {
  readonly header?: { readonly revision?: string };
  readonly kvs?: readonly KeyValue[];
}
interface TxnAnswer {
  readonly header?: { readonly revision?: string };
  readonly succeeded?: boolean;
}
type Compare = Record<string, unknown>;

/** How often takeEpoch or acquireLease retries its compare-and-set against other writers before it gives up (it never should). */
const MAX_CAS_ROUNDS = 100;

/**
 * The contract on etcd v3 (docs: packages/coordinator/README.md). Under the prefix:
 * - `epoch`: the counter, a decimal string, advanced by compare-and-set on its mod revision;
 * - `lease/<cluster>`: the holder, attached to an etcd lease of the ownership lease's TTL rounded
 *   up to whole seconds (etcd's unit; etcd itself may raise a TTL below its minimum, about 2 s with
 *   default timings: longer is allowed). The handle is that etcd lease's id, so a renewal or release
 *   touches only the holder's own incarnation of the lease; the holder acquiring its live lease again
 *   keeps it alive (one keepalive: the TTL it was granted) and gets the same handle;
 * - `doc/<name>`: a document; its version is the key's mod revision (a revision of the whole store,
 *   so it only grows, even across a delete and re-create).
 */
export class EtcdCoordinationStore implements CoordinationStore {
  readonly description: string;
  readonly #gateway: EtcdGateway;
  readonly #prefix: string;
  readonly #timeoutMs: number;
  readonly #resyncMs: number;
  readonly #watches = new Set<DocumentWatch>();

  constructor(options: EtcdStoreOptions) {
    this.#gateway = new EtcdGateway(options);
    this.#prefix = options.prefix ?? DEFAULT_ETCD_PREFIX;
    this.#timeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.#resyncMs = options.watchResyncMs ?? DEFAULT_WATCH_RESYNC_MS;
    this.description =
      options.description ??
      `etcd ${options.tls ? "https" : "http"}://${options.endpoints.join(",")}${this.#prefix}`;
  }

  takeEpoch(atLeast: bigint): Promise<bigint> {
    return this.#call("takeEpoch", async (deadline) => {
      const key = base64(`${this.#prefix}epoch`);
      for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
        const current = (await this.#range(key, deadline))[0];
        const value = BigInt(fromBase64(current?.value) || "0");
        const next = (value > atLeast ? value : atLeast) + 1n;
        const unchanged = current
          ? { key, target: "MOD", mod_revision: current.mod_revision }
          : { key, target: "CREATE", create_revision: "0" };
        if (await this.#txn([unchanged], [{ request_put: { key, value: base64(String(next)) } }], deadline))
          return next;
      }
      throw new Error(`the epoch counter changed under ${MAX_CAS_ROUNDS} compare-and-sets in a row`);
    });
  }

  readEpoch(): Promise<bigint> {
    return this.#call("readEpoch", async (deadline) => {
      const current = (await this.#range(base64(`${this.#prefix}epoch`), deadline))[0];
      return BigInt(fromBase64(current?.value) || "0");
    });
  }

  acquireLease(cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome> {
    return this.#call("acquireLease", async (deadline) => {
      const key = this.#leaseKey(cluster);
      for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
        const current = (await this.#range(key, deadline))[0];
        const currentHolder = current && fromBase64(current.value);
        // etcd deletes the key of an expired lease itself (its lessor checks every 500 ms), so a key
        // that is there is held. (timetolive cannot tell "expired" from "under a second left": both 0.)
        if (current && currentHolder !== holder) return { held: false, holder: currentHolder };
        if (current?.lease !== undefined && (await this.#keepAlive(current.lease, deadline))) {
          // The holder's own live lease (an earlier acquire whose answer was lost, or a late
          // duplicate): extended by the TTL it was granted, and the same handle, so that a renewal
          // with it goes on working.
          return { held: true, lease: { cluster, holder, ttlMs, handle: current.lease } };
        }
        const taken = await this.#takeAfresh(key, current, holder, ttlMs, deadline);
        if (taken !== undefined) return { held: true, lease: { cluster, holder, ttlMs, handle: taken } };
        // Someone wrote the key since we read it: read it again.
      }
      throw new Error(`the lease key changed under ${MAX_CAS_ROUNDS} compare-and-sets in a row`);
    });
  }

  /**
   * Puts `holder` on the lease key under a new etcd lease of `ttlMs` rounded up to whole seconds,
   * if the key is still as read (`current`: absent, or an expired lease's); the new lease's id, or
   * undefined if the key changed. Putting the key under a new etcd lease detaches it from the old
   * one, whose revocation then deletes nothing of ours.
   */
  async #takeAfresh(
    key: string,
    current: KeyValue | undefined,
    holder: string,
    ttlMs: number,
    deadline: number,
  ): Promise<string | undefined> {
    const ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    const granted = await this.#gateway.call<{ ID: string }>(
      "/v3/lease/grant",
      { TTL: String(ttlSeconds) },
      deadline,
    );
    const unchanged = current
      ? { key, target: "MOD", mod_revision: current.mod_revision }
      : { key, target: "CREATE", create_revision: "0" };
    const put = { request_put: { key, value: base64(holder), lease: granted.ID } };
    if (await this.#txn([unchanged], [put], deadline)) return granted.ID;
    await this.#revoke(granted.ID, deadline).catch(() => {}); // holds nothing: it expires anyway
    return undefined;
  }

  renewLease(lease: OwnershipLease): Promise<LeaseOutcome> {
    return this.#call("renewLease", async (deadline) => {
      // One keepalive answers the remaining TTL; 0 (or none) means the etcd lease is gone, and its
      // key with it: an expired lease stays lost.
      const alive = await this.#keepAlive(lease.handle, deadline);
      const current = (await this.#range(this.#leaseKey(lease.cluster), deadline))[0];
      if (alive && current?.lease === lease.handle && fromBase64(current.value) === lease.holder) {
        return { held: true, lease };
      }
      return { held: false, holder: current && fromBase64(current.value) };
    });
  }

  releaseLease(lease: OwnershipLease): Promise<void> {
    // Revoking the etcd lease deletes exactly the keys attached to it: the ownership key if it is
    // still this incarnation's, nothing if the holder re-acquired since (a new etcd lease).
    return this.#call("releaseLease", (deadline) => this.#revoke(lease.handle, deadline));
  }

  readLease(cluster: string): Promise<LeaseInfo | undefined> {
    return this.#call("readLease", async (deadline) => {
      const current = (await this.#range(this.#leaseKey(cluster), deadline))[0];
      if (!current?.lease) return undefined;
      const left = await this.#gateway.call<{ TTL?: string }>(
        "/v3/lease/timetolive",
        { ID: current.lease },
        deadline,
      );
      // protobuf JSON leaves zero fields out: no TTL is 0 s (under a second left); a lease that is gone says -1.
      const seconds = Number(left.TTL ?? "0");
      if (seconds < 0) return undefined;
      return { holder: fromBase64(current.value), remainingMs: seconds * 1000 };
    });
  }

  readDocument(name: string): Promise<VersionedDocument | undefined> {
    return this.#call("readDocument", async (deadline) => {
      const current = (await this.#range(this.#documentKey(name), deadline))[0];
      return current && { value: fromBase64(current.value), version: BigInt(current.mod_revision ?? "0") };
    });
  }

  writeDocument(name: string, value: string, expectedVersion: bigint): Promise<bigint | undefined> {
    return this.#call("writeDocument", async (deadline) => {
      const key = this.#documentKey(name);
      const unchanged =
        expectedVersion === 0n
          ? { key, target: "CREATE", create_revision: "0" }
          : { key, target: "MOD", mod_revision: String(expectedVersion) };
      const answer = await this.#gateway.call<TxnAnswer>(
        "/v3/kv/txn",
        { compare: [unchanged], success: [{ request_put: { key, value: base64(value) } }] },
        deadline,
      );
      return answer.succeeded === true ? BigInt(answer.header?.revision ?? "0") : undefined;
    });
  }

  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    const watch = new DocumentWatch(
      this.#gateway,
      this.#documentKey(name),
      this.#timeoutMs,
      this.#resyncMs,
      onChange,
    );
    this.#watches.add(watch);
    watch.start();
    return () => {
      this.#watches.delete(watch);
      watch.stop();
    };
  }

  close(): Promise<void> {
    for (const watch of this.#watches) watch.stop();
    this.#watches.clear();
    this.#gateway.close();
    return Promise.resolve();
  }

  #documentKey(name: string): string {
    return base64(`${this.#prefix}doc/${name}`);
  }

  #leaseKey(cluster: string): string {
    return base64(`${this.#prefix}lease/${cluster}`);
  }

  async #range(key: string, deadline: number): Promise<readonly KeyValue[]> {
    return (await this.#gateway.call<RangeAnswer>("/v3/kv/range", { key }, deadline)).kvs ?? [];
  }

  async #txn(compare: Compare[], success: Compare[], deadline: number): Promise<boolean> {
    return (
      (await this.#gateway.call<TxnAnswer>("/v3/kv/txn", { compare, success }, deadline)).succeeded === true
    );
  }

  /** One keepalive of etcd lease `leaseId`: whether it was still alive (and is now extended). */
  async #keepAlive(leaseId: string, deadline: number): Promise<boolean> {
    const kept = await this.#gateway.call<{ result?: { TTL?: string } }>(
      "/v3/lease/keepalive",
      { ID: leaseId },
      deadline,
    );
    // protobuf JSON leaves zero fields out: no TTL means 0, a lease that is gone.
    return Number(kept.result?.TTL ?? "0") > 0;
  }

  async #revoke(leaseId: string, deadline: number): Promise<void> {
    try {
      await this.#gateway.call("/v3/lease/revoke", { ID: leaseId }, deadline);
    } catch (error) {
      if (!isNotFound(error)) throw error; // already expired or revoked: released either way
    }
  }

  /**
   * Runs one operation under the call timeout; any failure becomes CoordinatorUnavailableError.
   * Every request of the operation shares one deadline, which the gateway enforces itself: that way
   * a request to a member that hangs fails in the gateway, which then starts the next call at the
   * next member (a timer out here would win the race and leave the gateway none the wiser).
   */
  async #call<T>(what: string, work: (deadline: number) => Promise<T>): Promise<T> {
    try {
      return await work(performance.now() + this.#timeoutMs);
    } catch (error) {
      throw unavailable(this.description, what, error);
    }
  }
}
