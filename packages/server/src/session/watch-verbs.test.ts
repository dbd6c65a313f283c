import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { encodeReply, type Reply } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { MemoryEpochStore } from "../epoch/epoch-store.js";
import { DEFAULT_SERVER_LIMITS } from "../limits.js";
import { LockNode } from "../node.js";
import { LockVerbs } from "./lock-verbs.js";

const SELF = "127.0.0.1:7000";

function setup() {
  const clock = new ManualClock(1_000);
  const node = new LockNode({
    dataDir: undefined,
    limits: DEFAULT_SERVER_LIMITS,
    advertise: SELF,
    clock,
    timers: new TimerQueue(clock, { host: "manual" }),
    startAs: "standby",
    epochStore: new MemoryEpochStore(),
    wallNow: () => 1_800_000_000_000,
  });
  const sent: string[] = [];
  const verbs = new LockVerbs(
    { node, limits: DEFAULT_SERVER_LIMITS, version: "test", connectionCount: () => 1 },
    (reply: Reply) => sent.push(encodeReply(reply).trimEnd()),
  );
  const promote = () => {
    node.setRole("active", SELF);
    node.takeEpoch(true);
    expect(node.serving).toBe(true);
  };
  return { node, verbs, sent, promote };
}

/** Watches through a node's role changes: redirected on a standby, ended with a push on a step-down. */
describe("watch verbs and roles", () => {
  it("redirects O and U on a standby like any lock verb", () => {
    const { node, verbs, sent } = setup();
    verbs.run({ op: "O", key: "k" });
    expect(sent).toEqual([expect.stringMatching(/^E O k NO_ACTIVE - /)]);
    node.follow("10.0.0.9:7420");
    verbs.run({ op: "O", key: "k" });
    verbs.run({ op: "U", key: "k" });
    expect(sent.slice(1)).toEqual(["M O k 10.0.0.9:7420", "M U k 10.0.0.9:7420"]);
    expect(node.watches.count).toBe(0);
  });

  it("ends every watch with a pushed redirect when the node steps down, or NO_ACTIVE without a successor", () => {
    const { node, verbs, sent, promote } = setup();
    promote();
    verbs.run({ op: "O", key: "a" });
    verbs.run({ op: "O", key: "b" });
    expect(sent.splice(0)).toEqual(["O a 0 - 0", "O b 0 - 0"]);
    node.setRole("standby", "10.0.0.2:7420");
    verbs.redirectPending("10.0.0.2:7420");
    expect(sent.splice(0)).toEqual(["M O a 10.0.0.2:7420", "M O b 10.0.0.2:7420"]);
    expect(node.watches.count).toBe(0);
    promote();
    verbs.run({ op: "O", key: "a" });
    node.setRole("standby", undefined);
    verbs.redirectPending(undefined);
    expect(sent.splice(0)).toEqual(["O a 0 - 0", expect.stringMatching(/^E O a NO_ACTIVE - /)]);
    expect(node.watches.count).toBe(0);
  });

  it("ends the session's watches when it closes", () => {
    const { node, verbs, promote } = setup();
    promote();
    verbs.run({ op: "O", key: "a" });
    expect(node.watches.count).toBe(1);
    verbs.close();
    expect(node.watches.count).toBe(0);
  });
});
