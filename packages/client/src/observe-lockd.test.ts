import { FaultProxy, LockdProcess } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type HolderState, LockClient } from "./index.js";
import { allConnected, nextEvent } from "./integration.test.support.js";

/** `client.observe()` against a real lockd: the states a watcher sees, across a reconnect, and its end. */
describe("LockClient.observe", () => {
  let lockd: LockdProcess;
  const closeAfter: Array<{ close(): Promise<unknown> | unknown }> = [];

  beforeAll(async () => {
    lockd = await LockdProcess.start();
  });
  afterEach(async () => {
    for (const item of closeAfter.splice(0).reverse()) await item.close();
  });
  afterAll(async () => {
    await lockd?.dispose();
  });

  function client(servers = [`127.0.0.1:${lockd.port}`]): LockClient {
    const created = new LockClient({ servers, reconnectIntervalMs: 100 });
    closeAfter.push(created);
    return created;
  }

  const brief = (state: HolderState) => (state.held ? `held ${state.token}` : "free");

  it("sees acquire, release and acquire with their tokens, and ends when its client closes", async () => {
    const watcher = client();
    const holder = client();
    const states = watcher.observe("obs:1");
    expect(brief((await states.next()).value)).toBe("free");
    const first = await holder.acquire("obs:1", { leaseMs: 30_000 });
    expect((await states.next()).value).toEqual({
      key: "obs:1",
      held: true,
      token: first.token,
      mode: { kind: "exclusive" },
      holders: 1,
    });
    await first.release();
    expect(brief((await states.next()).value)).toBe("free");
    const second = await holder.acquire("obs:1", { leaseMs: 30_000 });
    expect(second.token).toBeGreaterThan(first.token);
    expect(brief((await states.next()).value)).toBe(`held ${second.token}`);
    const ended = states.next();
    await watcher.close();
    expect(await ended).toEqual({ value: undefined, done: true });
    await second.release();
  });

  it("watches again after its connection drops, and yields what changed meanwhile", async () => {
    const proxy = await FaultProxy.start(lockd.port);
    closeAfter.push(proxy);
    const watcher = client([`127.0.0.1:${proxy.port}`]);
    await allConnected(watcher);
    const holder = client();
    const lock = await holder.acquire("obs:2", { leaseMs: 30_000 });
    const controller = new AbortController();
    const states = watcher.observe("obs:2", { signal: controller.signal });
    expect(brief((await states.next()).value)).toBe(`held ${lock.token}`);
    proxy.cut();
    await lock.release();
    const reconnected = nextEvent(watcher, "connect");
    proxy.heal();
    await reconnected;
    expect(brief((await states.next()).value)).toBe("free");
    controller.abort();
    expect(await states.next()).toEqual({ value: undefined, done: true });
  });
});
