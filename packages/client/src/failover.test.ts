import { FaultProxy, LockdProcess } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AbortError, LockClient, LockLostError, NoServerError } from "./index.js";
import {
  allConnected,
  eventually,
  FakeStandby,
  holdKey,
  isFree,
  nextEvent,
  serverCounts,
} from "./integration.test.support.js";

/**
 * Failure handling against a real lockd, with FaultProxy in the path to cut, freeze and delay the
 * client's connections: failover of an in-flight acquire, the id that makes its retry safe,
 * reconnects, release retries, redirects, abort races, keepalive, autoExtend.
 */
describe("LockClient failover", () => {
  let lockd: LockdProcess;
  const closeAfter: Array<{ close(): Promise<unknown> | unknown }> = [];
  const openProxies: FaultProxy[] = [];

  beforeAll(async () => {
    lockd = await LockdProcess.start();
  });
  afterEach(async () => {
    // Healed first, so that closing clients can release what they hold.
    for (const proxy of openProxies.splice(0)) proxy.heal();
    for (const item of closeAfter.splice(0).reverse()) await item.close();
  });
  afterAll(async () => {
    await lockd?.dispose();
  });

  async function proxies(count: number): Promise<FaultProxy[]> {
    const started = await Promise.all(Array.from({ length: count }, () => FaultProxy.start(lockd.port)));
    closeAfter.push(...started);
    openProxies.push(...started);
    return started;
  }

  async function connectedClient(
    servers: string[],
    options: Partial<ConstructorParameters<typeof LockClient>[0]> = {},
  ) {
    const client = new LockClient({ servers, reconnectIntervalMs: 100, ...options });
    closeAfter.push(client);
    await allConnected(client);
    return client;
  }

  /** Which proxy forwarded more client bytes since `before`. */
  function carrier(pair: FaultProxy[], before: number[]): number {
    const grew = pair.map((proxy, i) => proxy.bytes.toServer - before[i]!);
    expect(grew.filter((bytes) => bytes > 0)).toHaveLength(1);
    return grew.findIndex((bytes) => bytes > 0);
  }

  it("moves an in-flight acquire to the other connection when its socket is destroyed", async () => {
    const pair = await proxies(2);
    const client = await connectedClient(pair.map((proxy) => proxy.address));
    const holder = await holdKey(lockd, "fo:inflight");
    const before = pair.map((proxy) => proxy.bytes.toServer);
    const acquiring = client.acquire("fo:inflight", { leaseMs: 30_000, waitMs: 20_000 });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    const used = carrier(pair, before);
    const retried = nextEvent(client, "retry");
    pair[used]!.dropAll();
    expect(await retried).toMatchObject({ key: "fo:inflight", attempt: 2 });
    // The retry queued again on the server through the other proxy.
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    await holder.release();
    const lock = await acquiring;
    expect(await lock.release()).toBe(true);
    holder.close();
  });

  it("a retry with the same id finds the grant whose reply was lost: no orphan", async () => {
    const pair = await proxies(2);
    const client = await connectedClient(pair.map((proxy) => proxy.address));
    for (const proxy of pair) proxy.freeze("toClient");
    const before = pair.map((proxy) => proxy.bytes.toServer);
    const acquiring = client.acquire("fo:orphan", { leaseMs: 30_000, waitMs: 3_000 });
    // The server granted it; the grant is stuck in the proxy.
    await eventually(async () => (await serverCounts(lockd)).keys === 1);
    const used = carrier(pair, before);
    pair[1 - used]!.heal();
    pair[used]!.dropAll();
    pair[used]!.heal();
    const lock = await acquiring;
    // Still one key: the retry got the same grant instead of queueing behind an orphan (which,
    // with a 30 s lease, would have timed this acquire out).
    expect(await serverCounts(lockd)).toEqual({ keys: 1, waiters: 0 });
    expect(await lock.release()).toBe(true);
    expect(await isFree(lockd, "fo:orphan")).toBe(true);
  });

  it("fails with NoServerError once every connection has been tried", async () => {
    const [proxy] = await proxies(1);
    const client = await connectedClient([proxy!.address]);
    const holder = await holdKey(lockd, "fo:none");
    const acquiring = client.acquire("fo:none", { leaseMs: 30_000 });
    const failed = expect(acquiring).rejects.toBeInstanceOf(NoServerError);
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    proxy!.cut();
    await failed;
    // The connections' close dropped the waiter on the server.
    await eventually(async () => (await serverCounts(lockd)).waiters === 0);
    holder.close();
    proxy!.heal();
  });

  it("reconnects a dropped connection after the reconnect interval", async () => {
    const own = await LockdProcess.start();
    closeAfter.push({ close: () => own.dispose() });
    const client = await connectedClient([own.address], { reconnectIntervalMs: 150, reconnectJitterMs: 100 });
    const disconnected = nextEvent(client, "disconnect");
    const refused = nextEvent(client, "connectFailed");
    await own.kill();
    // The interval plus its random part (reconnectJitterMs), as the events say.
    const retryIn = {
      address: own.address,
      retryInMs: expect.toSatisfy((ms: number) => ms >= 150 && ms < 250),
    };
    expect(await disconnected).toMatchObject(retryIn);
    // While it is down, attempts are refused and retried at the interval.
    expect(await refused).toMatchObject(retryIn);
    const reconnected = nextEvent(client, "connect", (event) => event.reconnect);
    await own.restart();
    expect(await reconnected).toMatchObject({ address: own.address, reconnect: true });
    await allConnected(client);
    await using lock = await client.acquire("fo:reconnect", { leaseMs: 5_000 });
    expect(lock.held).toBe(true);
  });

  it("retries a release while the server is briefly unreachable", async () => {
    const [proxy] = await proxies(1);
    const client = await connectedClient([proxy!.address]);
    const lock = await client.acquire("fo:release", { leaseMs: 30_000 });
    proxy!.cut();
    const releasing = lock.release();
    // A cut proxy refuses connections: wait for a reconnect attempt to fail, then heal.
    await nextEvent(client, "connectFailed");
    proxy!.heal();
    expect(await releasing).toBe(true);
    expect(await isFree(lockd, "fo:release")).toBe(true);
  });

  it("gives up a release after the retry window, leaving the key to its lease", async () => {
    const [proxy] = await proxies(1);
    const client = await connectedClient([proxy!.address], { releaseRetryMs: 300 });
    const lock = await client.acquire("fo:release-gone", { leaseMs: 30_000 });
    proxy!.cut();
    await expect(lock.release()).rejects.toBeInstanceOf(NoServerError);
    expect(await isFree(lockd, "fo:release-gone")).toBe(false);
    proxy!.heal();
    await allConnected(client);
    const again = await client
      .acquire("fo:release-gone", { leaseMs: 30_000, waitMs: 100 })
      .catch((e: unknown) => e);
    expect(again).toMatchObject({ code: "LOCK_WAIT_TIMEOUT" });
  });

  it("follows a standby's redirect to the active, even one that is not configured", async () => {
    const standby = await FakeStandby.start(lockd.address);
    closeAfter.push(standby);
    const client = new LockClient({ servers: [standby.address] });
    closeAfter.push(client);
    const redirect = nextEvent(client, "redirect");
    const lock = await client.acquire("fo:redirect", { leaseMs: 30_000 });
    expect(await redirect).toMatchObject({
      from: standby.address,
      to: lockd.address,
      op: "A",
      key: "fo:redirect",
    });
    expect(await isFree(lockd, "fo:redirect")).toBe(false);
    expect(client.connections.map(({ address, standby }) => ({ address, standby }))).toEqual([
      { address: standby.address, standby: true },
      { address: standby.address, standby: true },
      { address: lockd.address, standby: false },
    ]);
    // The active is known now: the release goes straight there.
    const redirectedBefore = standby.redirected;
    expect(await lock.release()).toBe(true);
    expect(standby.redirected).toBe(redirectedBefore);
    expect(await isFree(lockd, "fo:redirect")).toBe(true);
  });

  it("an abort that races a grant releases the grant: the key ends free", async () => {
    const [proxy] = await proxies(1);
    const client = await connectedClient([proxy!.address]);
    const holder = await holdKey(lockd, "fo:race");
    const controller = new AbortController();
    const acquiring = client.acquire("fo:race", { leaseMs: 30_000, signal: controller.signal });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    // Replies take 100 ms to reach the client: the grant is on its way when the client aborts, so
    // the cancel finds nothing queued (C 0) and the grant must be released.
    proxy!.delayMs = 100;
    await holder.release();
    await eventually(async () => (await serverCounts(lockd)).waiters === 0);
    controller.abort(new Error("caller gave up"));
    const error = await acquiring.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).cause).toEqual(new Error("caller gave up"));
    await eventually(() => isFree(lockd, "fo:race"));
    holder.close();
  });

  it("an abort while queued withdraws the waiter on the server", async () => {
    const client = await connectedClient([lockd.address]);
    const holder = await holdKey(lockd, "fo:abort");
    const controller = new AbortController();
    const acquiring = client.acquire("fo:abort", { leaseMs: 30_000, signal: controller.signal });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    controller.abort();
    await expect(acquiring).rejects.toMatchObject({ name: "AbortError", code: "LOCK_ABORTED" });
    await eventually(async () => (await serverCounts(lockd)).waiters === 0);
    // The holder still holds it: the cancel withdrew the waiter and nothing else.
    expect(await isFree(lockd, "fo:abort")).toBe(false);
    holder.close();
  });

  it("pings detect a server that stopped answering", async () => {
    const [proxy] = await proxies(1);
    const client = await connectedClient([proxy!.address], { keepAliveMs: 100, reconnectIntervalMs: 60_000 });
    const dead = nextEvent(client, "disconnect");
    proxy!.freeze();
    const { error } = await dead;
    expect(error?.message).toMatch(/ping/);
    proxy!.heal();
  });

  it("autoExtend keeps a short lease through 5 lease periods, and aborts lock.signal when the server is gone", async () => {
    const own = await LockdProcess.start();
    closeAfter.push({ close: () => own.dispose() });
    const client = await connectedClient([own.address]);
    const leaseMs = 300;
    const lock = await client.acquire("fo:auto", { leaseMs, autoExtend: true });
    const firstDeadline = lock.expiresAt;
    // Time passing is the point here: five leases' worth.
    await new Promise((resolve) => setTimeout(resolve, 5 * leaseMs));
    expect(lock.held).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.expiresAt).toBeGreaterThan(firstDeadline + 4 * leaseMs);
    expect(await isFree(own, "fo:auto")).toBe(false);
    const lost = nextEvent(client, "lockLost");
    const aborted = new Promise<unknown>((resolve) =>
      lock.signal.addEventListener("abort", () => resolve(lock.signal.reason)),
    );
    await own.kill();
    expect(await aborted).toBeInstanceOf(LockLostError);
    expect(await lost).toMatchObject({ key: "fo:auto", token: lock.token });
    expect(lock.state).toBe("lost");
  });
});
