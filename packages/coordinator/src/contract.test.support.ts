import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type Socket } from "node:net";
import type { CoordinationStore, OwnershipLease, VersionedDocument } from "@lock/server";
import { afterAll, afterEach, describe, expect, it } from "vitest";

/** How a backend's stores are made for the contract suite. */
export interface ContractBackend {
  /**
   * A new store instance (its own connections) over the SAME namespace as every other one the
   * suite opens: several instances stand for several lockd processes.
   */
  open(): CoordinationStore;
  /** The lease length the expiry tests use (1 s for etcd, its unit). */
  readonly ttlMs: number;
  /** What the backend rounds a lease's TTL up to (etcd: whole seconds); 1 by default. */
  readonly ttlGrainMs?: number;
  /** Removes the namespace once the suite is done. */
  teardown?(): Promise<void>;
}

/** A server that accepts connections and never answers: only a call timeout can end a call to it. */
export async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as { port: number }).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

/** Polls `probe` every 25 ms until it returns true; fails after `timeoutMs`. */
export async function eventually(probe: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Takes an epoch once the store serves again after a fault (a killed etcd leader, terminated
 * sessions): calls in flight during the fault may fail, later ones must not.
 */
export async function takeEpochOnceBack(store: CoordinationStore, timeoutMs: number): Promise<bigint> {
  let taken = 0n;
  await eventually(
    async () => {
      taken = await store.takeEpoch(0n).catch(() => 0n);
      return taken > 0n;
    },
    timeoutMs,
    "takeEpoch after the fault",
  );
  return taken;
}

const held = (outcome: Awaited<ReturnType<CoordinationStore["acquireLease"]>>): OwnershipLease => {
  if (!outcome.held) throw new Error(`expected the lease, got held by ${outcome.holder}`);
  return outcome.lease;
};

/** The CoordinationStore contract (packages/server/src/coordination/store.ts), for one backend. */
export function describeCoordinationContract(name: string, backend: ContractBackend): void {
  describe(`${name}: the CoordinationStore contract`, () => {
    const opened: CoordinationStore[] = [];
    const open = () => {
      const store = backend.open();
      opened.push(store);
      return store;
    };
    const unique = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });
    afterAll(async () => {
      await backend.teardown?.();
    });

    it("counts epochs monotonically and above atLeast", async () => {
      const store = open();
      const start = await store.readEpoch();
      expect(await store.takeEpoch(0n)).toBe(start + 1n);
      expect(await store.takeEpoch(start)).toBe(start + 2n);
      expect(await store.takeEpoch(start + 10n)).toBe(start + 11n);
      expect(await store.takeEpoch(start + 5n)).toBe(start + 12n);
      expect(await store.readEpoch()).toBe(start + 12n);
    });

    it("never gives two concurrent takeEpoch calls from several instances the same value", async () => {
      const stores = [open(), open(), open()];
      const taken = await Promise.all(
        stores.flatMap((store) => Array.from({ length: 8 }, () => store.takeEpoch(0n))),
      );
      expect(new Set(taken).size).toBe(taken.length);
      const highest = [...taken].sort((x, y) => (x < y ? -1 : 1)).at(-1);
      expect(await stores[0]!.readEpoch()).toBe(highest);
    });

    it("keeps a lease exclusive between two instances and reports its holder and remaining time", async () => {
      const [a, b] = [open(), open()];
      const cluster = unique("c");
      expect(await a.readLease(cluster)).toBeUndefined();
      held(await a.acquireLease(cluster, "A", 5000));
      expect(await b.acquireLease(cluster, "B", 5000)).toEqual({ held: false, holder: "A" });
      const info = await b.readLease(cluster);
      const grain = backend.ttlGrainMs ?? 1;
      expect(info?.holder).toBe("A");
      expect(info!.remainingMs).toBeGreaterThan(0);
      expect(info!.remainingMs).toBeLessThanOrEqual(Math.ceil(5000 / grain) * grain);
    });

    it("lets another take a lease once it expired, and the expired holder's renewal fails", async () => {
      const [a, b] = [open(), open()];
      const cluster = unique("c");
      const lease = held(await a.acquireLease(cluster, "A", backend.ttlMs));
      await eventually(async () => (await b.readLease(cluster)) === undefined, backend.ttlMs * 10, "expiry");
      const taken = held(await b.acquireLease(cluster, "B", 5000));
      expect(await a.renewLease(lease)).toEqual({ held: false, holder: "B" });
      expect(await b.renewLease(taken)).toEqual({ held: true, lease: taken });
    });

    it("keeps an expired lease lost even when nobody took it; its holder acquiring again gets a new one", async () => {
      const a = open();
      const cluster = unique("c");
      const lease = held(await a.acquireLease(cluster, "A", backend.ttlMs));
      await eventually(async () => (await a.readLease(cluster)) === undefined, backend.ttlMs * 10, "expiry");
      expect(await a.renewLease(lease)).toEqual({ held: false, holder: undefined });
      const again = held(await a.acquireLease(cluster, "A", 5000));
      expect(again.handle).not.toBe(lease.handle);
      expect(await a.renewLease(lease)).toEqual({ held: false, holder: "A" });
      expect(await a.renewLease(again)).toEqual({ held: true, lease: again });
    });

    it("extends the same lease when its holder acquires it again (a lost answer, a late duplicate)", async () => {
      const [a, b] = [open(), open()];
      const cluster = unique("c");
      const first = held(await a.acquireLease(cluster, "A", 5000));
      const second = held(await a.acquireLease(cluster, "A", 5000));
      expect(second).toEqual(first);
      // A duplicate never shortens the lease.
      expect(held(await a.acquireLease(cluster, "A", 1)).handle).toBe(first.handle);
      expect((await b.readLease(cluster))!.remainingMs).toBeGreaterThan(1000);
      expect(await a.renewLease(first)).toEqual({ held: true, lease: first });
      expect(await b.acquireLease(cluster, "B", 5000)).toEqual({ held: false, holder: "A" });
      await a.releaseLease(second);
      expect(await a.renewLease(first)).toMatchObject({ held: false });
      held(await b.acquireLease(cluster, "B", 5000));
    });

    it("renews or releases nothing with a handle that is not the lease's", async () => {
      const a = open();
      const cluster = unique("c");
      const lease = held(await a.acquireLease(cluster, "A", 5000));
      const stranger = { ...lease, handle: lease.handle === "1" ? "2" : "1" };
      expect(await a.renewLease(stranger)).toEqual({ held: false, holder: "A" });
      await a.releaseLease(stranger);
      expect((await a.readLease(cluster))?.holder).toBe("A");
      expect(await a.renewLease(lease)).toEqual({ held: true, lease });
    });

    it("passes a released lease to another at once; release is idempotent", async () => {
      const [a, b] = [open(), open()];
      const cluster = unique("c");
      const lease = held(await a.acquireLease(cluster, "A", 30_000));
      await a.releaseLease(lease);
      await a.releaseLease(lease);
      expect(await b.readLease(cluster)).toBeUndefined();
      const taken = held(await b.acquireLease(cluster, "B", 30_000));
      expect(await a.renewLease(lease)).toEqual({ held: false, holder: "B" });
      await b.releaseLease(taken);
    });

    it("writes documents by compare-and-set on their version", async () => {
      const [a, b] = [open(), open()];
      const doc = unique("d");
      expect(await a.readDocument(doc)).toBeUndefined();
      expect(await a.writeDocument(doc, "x", 5n)).toBeUndefined();
      const v1 = (await a.writeDocument(doc, "one", 0n))!;
      expect(v1).toBeGreaterThan(0n);
      expect(await b.writeDocument(doc, "again", 0n)).toBeUndefined();
      const v2 = (await b.writeDocument(doc, "two", v1))!;
      expect(v2).toBeGreaterThan(v1);
      expect(await a.writeDocument(doc, "stale", v1)).toBeUndefined();
      expect(await a.readDocument(doc)).toEqual({ value: "two", version: v2 });
    });

    it("watches a document: its state at the start, then every change in order", async () => {
      const [writer, watcher] = [open(), open()];
      const doc = unique("d");
      const seen: Array<VersionedDocument | undefined> = [];
      const stop = watcher.watchDocument(doc, (document) => seen.push(document));
      await eventually(() => seen.length === 1, 5000, "the initial state");
      expect(seen[0]).toBeUndefined();
      let version = 0n;
      for (const value of ["one", "two", "three"]) {
        version = (await writer.writeDocument(doc, value, version))!;
        await eventually(() => seen.at(-1)?.version === version, 5000, `the change to ${value}`);
      }
      stop();
      expect(seen).toEqual([
        undefined,
        { value: "one", version: expect.any(BigInt) },
        { value: "two", version: expect.any(BigInt) },
        { value: "three", version },
      ]);
      const versions = seen.slice(1).map((document) => document!.version);
      expect([...versions].sort((x, y) => (x < y ? -1 : 1))).toEqual(versions);

      const late: Array<VersionedDocument | undefined> = [];
      const stopLate = watcher.watchDocument(doc, (document) => late.push(document));
      await eventually(() => late.length === 1, 5000, "the late watcher's initial state");
      expect(late).toEqual([{ value: "three", version }]);
      stopLate();
    });
  });
}
