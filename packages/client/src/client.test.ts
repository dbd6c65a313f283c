import { LockdProcess, selfSignedCertificate } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthError,
  ClientClosedError,
  InvalidArgumentError,
  LockClient,
  LockServerError,
  LockTimeoutError,
  NoServerError,
} from "./index.js";
import {
  allConnected,
  eventually,
  holdKey,
  isFree,
  nextEvent,
  serverCounts,
  serverInfo,
} from "./integration.test.support.js";

/** The client against one real lockd: the API, pipelining and matching, auth, TLS, close. */
describe("LockClient against lockd", () => {
  let lockd: LockdProcess;
  let client: LockClient;

  beforeAll(async () => {
    lockd = await LockdProcess.start({ args: ["--max-waiters-per-key", "2"] });
    client = new LockClient({ servers: [lockd.address] });
    await allConnected(client);
  });
  afterAll(async () => {
    await client?.close();
    await lockd?.dispose();
  });

  it("keeps two connections to a single address", async () => {
    expect(client.connections.map(({ address, state }) => ({ address, state }))).toEqual([
      { address: lockd.address, state: "ready" },
      { address: lockd.address, state: "ready" },
    ]);
    // Ours, plus the one serverInfo opens to ask.
    expect((await serverInfo(lockd)).get("connections")).toBe("3");
  });

  it("acquires, extends and releases; tokens only grow", async () => {
    const first = await client.acquire("api:basic", { leaseMs: 30_000 });
    expect(first.key).toBe("api:basic");
    expect(typeof first.token).toBe("bigint");
    expect(first.held).toBe(true);
    expect(first.remainingMs).toBeLessThanOrEqual(30_000);
    expect(first.remainingMs).toBeGreaterThan(20_000);
    expect(await client.tryAcquire("api:basic", { leaseMs: 1_000 })).toBeNull();
    const before = first.expiresAt;
    await first.extend(60_000);
    expect(first.expiresAt).toBeGreaterThan(before);
    expect(await first.release()).toBe(true);
    expect(await first.release()).toBe(true);
    const second = await client.tryAcquire("api:basic", { leaseMs: 1_000 });
    expect(second!.token).toBeGreaterThan(first.token);
    await second!.release();
  });

  it("reports false when the lease had already run out, and aborts the lock's signal", async () => {
    const lock = await client.acquire("api:expiring", { leaseMs: 100 });
    const lost = new Promise((resolve) => lock.signal.addEventListener("abort", resolve));
    await lost;
    // The server's lease may end a moment after the client's: wait until it has.
    await eventually(() => isFree(lockd, "api:expiring"));
    expect(await lock.release()).toBe(false);
  });

  it("a lease that runs out unextended is lost, with the event, though nothing read the lock", async () => {
    const lock = await client.acquire("api:unwatched", { leaseMs: 100 });
    const lost = await nextEvent(client, "lockLost", (event) => event.key === "api:unwatched");
    expect(lost.token).toBe(lock.token);
    expect(lock.state).toBe("lost");
    expect(lock.held).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBe(lost.error);
    expect(await lock.release()).toBe(false);
  });

  it("counts a lease granted after a wait from a fresh extension, not from the long-past request", async () => {
    const holder = await holdKey(lockd, "api:waited");
    const acquiring = client.acquire("api:waited", { leaseMs: 300 });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    // Let most of the lease go by while waiting, measured from the acquire's write.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const releasedAt = performance.now();
    await holder.release();
    const lock = await acquiring;
    // Counted from the acquire's write, the lease would end before releasedAt + 300; the extension
    // that followed the grant was written after releasedAt.
    expect(lock.expiresAt).toBeGreaterThan(releasedAt + 300);
    await lock.release();
    holder.close();
  });

  it("pipelines many concurrent acquires and releases over its two connections", async () => {
    const keys = Array.from({ length: 500 }, (_, i) => `api:many:${i}`);
    const locks = await Promise.all(keys.map((key) => client.acquire(key, { leaseMs: 30_000 })));
    expect(locks.map((lock) => lock.key)).toEqual(keys);
    expect(new Set(locks.map((lock) => lock.token)).size).toBe(keys.length);
    expect((await serverCounts(lockd)).keys).toBe(keys.length);
    expect(await Promise.all(locks.map((lock) => lock.release()))).toEqual(keys.map(() => true));
    expect((await serverCounts(lockd)).keys).toBe(0);
    expect((await serverInfo(lockd)).get("connections")).toBe("3");
  });

  it("matches replies that come back out of order across keys", async () => {
    // Waiters on held keys are answered later than acquires of free keys sent after them.
    const holders = await Promise.all([0, 1, 2].map((i) => holdKey(lockd, `api:ooo:held:${i}`)));
    const order: string[] = [];
    const waiting = [0, 1, 2].map((i) =>
      client.acquire(`api:ooo:held:${i}`, { leaseMs: 30_000 }).then((lock) => {
        order.push(lock.key);
        return lock;
      }),
    );
    const free = await Promise.all(
      [0, 1, 2].map((i) => client.acquire(`api:ooo:free:${i}`, { leaseMs: 30_000 })),
    );
    expect(free.map((lock) => lock.key)).toEqual(["api:ooo:free:0", "api:ooo:free:1", "api:ooo:free:2"]);
    expect(order).toEqual([]);
    for (const i of [2, 0, 1]) {
      await holders[i]!.release();
      await eventually(() => order.length === [2, 0, 1].indexOf(i) + 1);
    }
    expect(order).toEqual(["api:ooo:held:2", "api:ooo:held:0", "api:ooo:held:1"]);
    for (const lock of [...free, ...(await Promise.all(waiting))]) expect(await lock.release()).toBe(true);
    for (const holder of holders) holder.close();
  });

  it("two acquires of one key from one client exclude each other", async () => {
    const first = await client.acquire("api:same", { leaseMs: 30_000 });
    let secondGranted = false;
    const second = client.acquire("api:same", { leaseMs: 30_000 }).then((lock) => {
      secondGranted = true;
      return lock;
    });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    expect(secondGranted).toBe(false);
    await first.release();
    const lock = await second;
    expect(lock.token).toBeGreaterThan(first.token);
    await lock.release();
  });

  it("times out a bounded wait with LockTimeoutError; nothing is left queued", async () => {
    const holder = await holdKey(lockd, "api:busy");
    const error = await client.acquire("api:busy", { leaseMs: 1_000, waitMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: "LOCK_WAIT_TIMEOUT", key: "api:busy" });
    expect((await serverCounts(lockd)).waiters).toBe(0);
    holder.close();
  });

  it("passes a server refusal on with its code", async () => {
    const holder = await holdKey(lockd, "api:crowded");
    const waiters = [
      client.acquire("api:crowded", { leaseMs: 1_000 }),
      client.acquire("api:crowded", { leaseMs: 1_000 }),
    ];
    await eventually(async () => (await serverCounts(lockd)).waiters === 2);
    const error = await client.acquire("api:crowded", { leaseMs: 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockServerError);
    expect(error).toMatchObject({ code: "LOCK_SERVER_REFUSED", serverCode: "TOO_MANY_WAITERS" });
    await holder.release();
    for (const waiter of waiters) await (await waiter).release();
    holder.close();
  });

  it("withLock releases when the work throws, and returns what the work returns", async () => {
    const failure = new Error("work failed");
    await expect(
      client.withLock("api:with", { leaseMs: 30_000 }, async (lock) => {
        expect(lock.held).toBe(true);
        expect(await isFree(lockd, "api:with")).toBe(false);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await isFree(lockd, "api:with")).toBe(true);
    expect(await client.withLock("api:with", { leaseMs: 30_000 }, (lock) => lock.key)).toBe("api:with");
    expect(await isFree(lockd, "api:with")).toBe(true);
  });

  it("await using releases at the end of the block, also when it throws", async () => {
    const run = async () => {
      await using held = await client.acquire("api:using", { leaseMs: 30_000 });
      expect(await isFree(lockd, held.key)).toBe(false);
      throw new Error("inside the block");
    };
    await expect(run()).rejects.toThrow("inside the block");
    expect(await isFree(lockd, "api:using")).toBe(true);
  });

  it("refuses a bad key or duration before sending anything", async () => {
    const nowhere = new LockClient({ servers: ["127.0.0.1:1"], connectTimeoutMs: 1_000 });
    try {
      for (const key of ["", "has space", "new\nline", "x".repeat(1025)]) {
        await expect(nowhere.acquire(key, { leaseMs: 1_000 })).rejects.toBeInstanceOf(InvalidArgumentError);
      }
      await expect(nowhere.acquire("k", { leaseMs: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(nowhere.acquire("k", { leaseMs: 1.5 })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(nowhere.acquire("k", { leaseMs: 10, waitMs: -1 })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      // A valid request does go out, and finds no server.
      await expect(nowhere.acquire("k", { leaseMs: 1_000 })).rejects.toBeInstanceOf(NoServerError);
    } finally {
      await nowhere.close();
    }
  });

  it("close() rejects pending acquires, releases held locks, and refuses new calls", async () => {
    const closing = new LockClient({ servers: [lockd.address] });
    const held = await closing.acquire("api:close:held", { leaseMs: 30_000 });
    const holder = await holdKey(lockd, "api:close:wanted");
    const pending = closing.acquire("api:close:wanted", { leaseMs: 30_000 });
    const rejected = expect(pending).rejects.toBeInstanceOf(ClientClosedError);
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    await closing.close();
    await rejected;
    expect(held.state).toBe("released");
    expect(await isFree(lockd, "api:close:held")).toBe(true);
    expect((await serverCounts(lockd)).waiters).toBe(0);
    await expect(closing.acquire("k", { leaseMs: 1_000 })).rejects.toBeInstanceOf(ClientClosedError);
    holder.close();
  });
});

describe("LockClient with auth and TLS", () => {
  const certificate = selfSignedCertificate();
  let lockd: LockdProcess;

  beforeAll(async () => {
    lockd = await LockdProcess.start({
      args: ["--tls-cert", certificate.certPath, "--tls-key", certificate.keyPath],
      env: { LOCKD_AUTH_TOKEN: "s3cret-token-of-26-letters" },
    });
  });
  afterAll(async () => {
    await lockd?.dispose();
    certificate.dispose();
  });

  it("authenticates over TLS with the configured token", async () => {
    await using client = new LockClient({
      servers: [lockd.address],
      authToken: "s3cret-token-of-26-letters",
      tls: { ca: certificate.cert },
    });
    await using lock = await client.acquire("tls:key", { leaseMs: 5_000 });
    expect(lock.token).toBeGreaterThan(0n);
  });

  it("rejects with AuthError for a wrong token or none", async () => {
    for (const authToken of ["wrong-token", undefined]) {
      await using client = new LockClient({
        servers: [lockd.address],
        tls: { ca: certificate.cert },
        ...(authToken === undefined ? {} : { authToken }),
      });
      const error = await client.acquire("tls:key", { leaseMs: 5_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthError);
      expect(error).toMatchObject({ code: "LOCK_AUTH_FAILED" });
    }
  });

  it("does not talk plain text to a TLS port", async () => {
    await using client = new LockClient({
      servers: [lockd.address],
      authToken: "s3cret-token-of-26-letters",
      connectTimeoutMs: 500,
    });
    await expect(client.acquire("tls:key", { leaseMs: 5_000 })).rejects.toBeInstanceOf(NoServerError);
  });
});
