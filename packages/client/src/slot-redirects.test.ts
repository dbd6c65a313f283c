import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import {
  encodeReply,
  isDecodeError,
  isPeerFrame,
  keySlot,
  parseRequestLine,
  type Reply,
  type Request,
  SlotMap,
} from "@lock/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient } from "./index.js";
import type { ClientSocket } from "./socket.js";

/**
 * `S` replies from a node that is behind the client's slot map: a move of the key's slot to the
 * node's cluster has committed, the client has read the new map, and the node has not yet (its
 * watch of the store lags). Scripted nodes on a manual clock, behind the client's `connect`.
 */
const KEY = "moved:key";
const SLOT = keySlot(KEY);
const CLUSTERS = new Map([
  ["east", ["east:1"]],
  ["west", ["west:1"]],
]);
/** Every slot east's, then (v3) moving to west, then (v4) west's. */
const MOVED = SlotMap.of(2n, CLUSTERS, [{ from: 0, to: 16_383, cluster: "east" }]).withMoveBegun(
  0,
  16_383,
  "west",
  3n,
);
const COMMITTED = MOVED.withMoveCommitted(0, 16_383, 4n);

/** A node that answers each request line with what `answer` says (nothing: no reply). */
type Answer = (request: Request) => Reply | undefined;

class ScriptedSocket implements ClientSocket {
  destroyed = false;
  readonly #listeners = new Map<string, Array<(...args: never[]) => void>>();

  constructor(readonly answer: Answer) {
    setImmediate(() => this.#emit("connect"));
  }

  write(data: string): boolean {
    for (const line of data.split("\n")) {
      if (line === "") continue;
      const request = parseRequestLine(line);
      if (isDecodeError(request) || isPeerFrame(request)) throw new Error(`unexpected ${line}`);
      const reply = this.answer(request);
      if (reply !== undefined)
        setImmediate(() => this.#emit("data", new TextEncoder().encode(encodeReply(reply))));
    }
    return true;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    setImmediate(() => this.#emit("close"));
  }

  on(event: string, listener: (...args: never[]) => void): this {
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), listener]);
    return this;
  }

  #emit(event: string, ...args: unknown[]): void {
    if (this.destroyed && event !== "close") return;
    for (const listener of this.#listeners.get(event) ?? []) (listener as (...a: unknown[]) => void)(...args);
  }
}

const redirect = (request: Request & { key: string }, cluster: string, version: bigint): Reply => ({
  kind: "S",
  op: request.op,
  key: request.key,
  slot: SLOT,
  version,
  cluster,
  address: CLUSTERS.get(cluster)![0]!,
  ...("id" in request && request.id !== undefined ? { id: request.id } : {}),
});

/** Lets every socket event and promise continuation that is due run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * East has read the commit: the key is west's now (v4), and east redirects it there. West answers
 * from the map it has: while `west.behind`, v3, in which the key is still east's.
 */
function deployment(clients: LockClient[]) {
  const clock = new ManualClock(0);
  const timers = new TimerQueue(clock, { host: "manual" });
  const west = { behind: false, asked: [] as Request[] };
  // Both nodes are their cluster's active (what a client searching for one while it waits learns).
  const info: Reply = { kind: "I", fields: new Map([["role", "active"]]) };
  const answers: Record<string, Answer> = {
    "east:1": (request) => {
      if (request.op === "K") return { kind: "K", map: COMMITTED };
      if (request.op === "I") return info;
      return "key" in request ? redirect(request, "west", 4n) : undefined;
    },
    "west:1": (request) => {
      if (request.op === "K") return { kind: "K", map: west.behind ? MOVED : COMMITTED };
      if (request.op === "I") return info;
      if (request.op !== "A" && request.op !== "R") return undefined;
      west.asked.push(request);
      if (west.behind) return redirect(request, "east", 3n);
      return request.op === "A"
        ? { kind: "A", key: request.key, token: 7n, id: request.id }
        : { kind: "R", key: request.key, released: true };
    },
  };
  const client = new LockClient({
    servers: ["east:1"],
    timers,
    connect: (server) => new ScriptedSocket(answers[server.address]!),
  });
  clients.push(client);
  /** `ms` pass (the retry interval by default). */
  const pause = async (ms = 200) => {
    clock.set(clock.now() + ms);
    timers.runDue();
    await settle();
  };
  return { client, west, pause };
}

/** What a promise settled with so far (undefined while pending). */
function outcome<T>(promise: Promise<T>): { value: T | Error | undefined } {
  const seen: { value: T | Error | undefined } = { value: undefined };
  promise.then(
    (value) => (seen.value = value),
    (error: Error) => (seen.value = error),
  );
  return seen;
}

describe("an S reply from a node behind the client's slot map", () => {
  const clients: LockClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  it("is asked again after the retry interval, not bounced back at once until the redirect limit", async () => {
    const { client, west, pause } = deployment(clients);
    west.behind = true;
    const acquired = outcome(client.acquire(KEY, { leaseMs: 10_000, waitMs: 5_000 }));
    await settle();
    // The client waits out its retry interval (it asked west once more only if the map retired
    // the connection its hint had opened), rather than sending the acquire straight back there
    // until the redirect limit fails it.
    expect(acquired.value).toBeUndefined();
    const asked = west.asked.length;
    expect(asked).toBeLessThanOrEqual(2);
    // Nor does finding an active (east, searched for while it waits) wake it early: only time helps.
    await pause(0);
    await pause(50);
    expect(west.asked).toHaveLength(asked);
    west.behind = false;
    await pause(150);
    expect(acquired.value).toMatchObject({ key: KEY, token: 7n });
    // The same acquire each time, asked with its id.
    expect(west.asked).toHaveLength(asked + 1);
    expect(new Set(west.asked.map((request) => (request.op === "A" ? request.id : undefined))).size).toBe(1);
  });

  it("pauses a release too, which then releases", async () => {
    const { client, west, pause } = deployment(clients);
    const lock = await settleWith(client.acquire(KEY, { leaseMs: 10_000 }));
    west.behind = true;
    const releases = () => west.asked.filter((request) => request.op === "R").length;
    const released = outcome(lock.release());
    await settle();
    expect(released.value).toBeUndefined();
    const asked = releases();
    await pause(0);
    await pause(50);
    expect(releases()).toBe(asked);
    west.behind = false;
    await pause(150);
    expect(released.value).toBe(true);
  });
});

/** Resolves `promise`, letting the scripted sockets run meanwhile. */
async function settleWith<T>(promise: Promise<T>): Promise<T> {
  const seen = outcome(promise);
  await settle();
  if (seen.value === undefined) throw new Error("not settled");
  if (seen.value instanceof Error) throw seen.value;
  return seen.value as T;
}
