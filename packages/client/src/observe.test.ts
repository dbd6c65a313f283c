import { EXCLUSIVE, type Reply } from "@lock/protocol";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Connection, WatchListener } from "./connection.js";
import { ClientClosedError, LockServerError, NoServerError } from "./errors.js";
import { advance, fakeTimers } from "./fakes.test.support.js";
import { type HolderState, KeyObserver, type ObserveContext } from "./observe.js";

type Done = (reply: Reply | undefined, connection: Connection | undefined, error: Error | undefined) => void;

/** A connection that only records who watches what on it. */
class FakeConnection {
  readonly listeners = new Set<WatchListener>();
  unwatched = 0;
  watch(_key: string, listener: WatchListener): void {
    this.listeners.add(listener);
  }
  unwatch(_key: string, listener: WatchListener): void {
    if (this.listeners.delete(listener)) this.unwatched += 1;
  }
  push(reply: Reply): void {
    for (const listener of [...this.listeners]) listener.pushed(reply);
  }
  close(): void {
    for (const listener of [...this.listeners]) listener.ended();
    this.listeners.clear();
  }
}

function setup() {
  const subscriptions: Done[] = [];
  const abandoned: Error[] = [];
  const endedObservers: KeyObserver[] = [];
  const context: ObserveContext = {
    timers: fakeTimers(),
    retryIntervalMs: 200,
    subscribe: (_key, done) => {
      subscriptions.push(done);
      return { abandon: (error) => abandoned.push(error) };
    },
    ended: (observer) => endedObservers.push(observer),
  };
  return { context, subscriptions, abandoned, endedObservers };
}

const held = (token: bigint): Reply => ({ kind: "O", key: "k", token, mode: EXCLUSIVE, holders: 1 });
const free: Reply = { kind: "O", key: "k", token: 0n, mode: undefined, holders: 0 };
const state = (token: bigint): HolderState =>
  token === 0n
    ? { key: "k", held: false, token, mode: undefined, holders: 0 }
    : { key: "k", held: true, token, mode: EXCLUSIVE, holders: 1 };

async function take(observer: KeyObserver, count: number): Promise<HolderState[]> {
  const states: HolderState[] = [];
  for (let i = 0; i < count; i++) {
    const result = await observer.next();
    if (result.done) break;
    states.push(result.value);
  }
  return states;
}

describe("KeyObserver", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("yields the answer and every pushed change, without repeating a state", async () => {
    const { context, subscriptions } = setup();
    const observer = new KeyObserver("k", context, undefined);
    const connection = new FakeConnection();
    subscriptions[0]!(free, connection as unknown as Connection, undefined);
    connection.push(held(5n));
    connection.push(held(5n));
    connection.push(free);
    expect(await take(observer, 3)).toEqual([state(0n), state(5n), state(0n)]);
  });

  it("watches again when the connection closes or the watch is redirected, and yields only what changed", async () => {
    const { context, subscriptions } = setup();
    const observer = new KeyObserver("k", context, undefined);
    const first = new FakeConnection();
    subscriptions[0]!(held(5n), first as unknown as Connection, undefined);
    first.close();
    expect(subscriptions).toHaveLength(2);
    const second = new FakeConnection();
    // The new active has the same holder: nothing new to yield.
    subscriptions[1]!(held(5n), second as unknown as Connection, undefined);
    second.push({ kind: "M", op: "O", key: "k", address: "10.0.0.2:7420" });
    expect(second.listeners.size).toBe(1);
    expect(subscriptions).toHaveLength(3);
    subscriptions[2]!(held(9n), new FakeConnection() as unknown as Connection, undefined);
    expect(await take(observer, 2)).toEqual([state(5n), state(9n)]);
  });

  it("keeps asking while no node answers, and fails on a refusal", async () => {
    const { context, subscriptions } = setup();
    const observer = new KeyObserver("k", context, undefined);
    subscriptions[0]!(undefined, undefined, new NoServerError("nobody"));
    advance(199);
    expect(subscriptions).toHaveLength(1);
    advance(1);
    expect(subscriptions).toHaveLength(2);
    const refusal = new LockServerError("TOO_MANY_WATCHES", "the server watches 100000 keys");
    subscriptions[1]!(undefined, undefined, refusal);
    await expect(observer.next()).rejects.toBe(refusal);
  });

  it("ends on abort, on return() and on the client's close, and stops watching", async () => {
    const { context, subscriptions, abandoned, endedObservers } = setup();
    const controller = new AbortController();
    const aborted = new KeyObserver("k", context, controller.signal);
    const connection = new FakeConnection();
    subscriptions[0]!(free, connection as unknown as Connection, undefined);
    const pending = (async () => {
      await aborted.next();
      return aborted.next();
    })();
    controller.abort();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(connection.unwatched).toBe(1);

    const broken = new KeyObserver("k", context, undefined);
    await broken.return();
    expect(abandoned).toHaveLength(1);
    expect(await broken.next()).toEqual({ value: undefined, done: true });

    const closing = new KeyObserver("k", context, undefined);
    subscriptions[2]!(undefined, undefined, new ClientClosedError());
    expect(await closing.next()).toEqual({ value: undefined, done: true });
    expect(endedObservers).toEqual([aborted, broken, closing]);
  });

  it("keeps only the newest states for a consumer that does not read", async () => {
    const { context, subscriptions } = setup();
    const observer = new KeyObserver("k", context, undefined);
    const connection = new FakeConnection();
    subscriptions[0]!(free, connection as unknown as Connection, undefined);
    for (let token = 1n; token <= 100n; token++) connection.push(held(token));
    const states = await take(observer, 64);
    expect(states).toHaveLength(64);
    expect(states.at(-1)).toEqual(state(100n));
    expect(states[0]).toEqual(state(37n));
  });
});
