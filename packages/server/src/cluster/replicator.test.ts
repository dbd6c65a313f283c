import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { parseRequestLine } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import {
  type ReplicaLink,
  Replicator,
  SNAPSHOT_CHUNK_HOLDERS,
  SNAPSHOT_HIGH_WATER_BYTES,
} from "./replicator.js";

/** A link that records what would have been written. */
function fakeLink(): ReplicaLink & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    send(text: string) {
      lines.push(...text.split("\n").filter((line) => line !== ""));
    },
    flush() {},
    queuedBytes: 0,
  };
}

/** Starts a handoff; the returned function tells how it ended so far (undefined: not yet). */
function startHandoff(replicator: Replicator, link: ReplicaLink, epoch: bigint, timeoutMs: number) {
  let outcome: boolean | undefined;
  replicator.handoff(link, epoch, timeoutMs, (acked) => {
    expect(outcome).toBeUndefined(); // once
    outcome = acked;
  });
  return () => outcome;
}

/** A replicator on a manual clock; `clock.advance()` then `timers.runDue()` moves time. */
function replicatorAt(window?: number, foldIntervalMs?: number) {
  const clock = new ManualClock();
  const timers = new TimerQueue(clock, { host: "manual" });
  const replicator = new Replicator(timers, window, foldIntervalMs);
  const advance = (ms: number) => {
    clock.advance(ms);
    timers.runDue();
  };
  return { replicator, clock, timers, advance };
}

const table = {
  *holders() {
    yield { key: "a", token: 11n, remainingMs: 900, id: "r1" };
    yield { key: "b", token: 12n, remainingMs: 50, id: undefined };
  },
  keyHolders: () => [],
};

describe("Replicator", () => {
  it("streams nothing while disabled (a standby) and nothing to a link without a snapshot", () => {
    const { replicator } = replicatorAt();
    const link = fakeLink();
    replicator.grant("k", 1n, 1000, undefined);
    replicator.enabled = true;
    replicator.grant("k", 2n, 1000, undefined);
    expect(link.lines).toEqual([]);
    expect(replicator.isStreaming(link)).toBe(false);
  });

  it("sends a snapshot with remaining durations, then every change in order with increasing seq", () => {
    const { replicator } = replicatorAt();
    replicator.enabled = true;
    replicator.grant("before", 1n, 1000, undefined); // seq 1, before the link exists
    const link = fakeLink();
    replicator.sendSnapshot(link, table, 7n);
    replicator.grant("c", 13n, 30_000, "r2");
    replicator.extend("a", 11n, 5_000, "r1");
    replicator.free("b", 12n);
    replicator.announceEpoch(8n);
    expect(link.lines).toEqual([
      "!S 7 1",
      "!h a 11 900 r1",
      "!h b 12 50",
      "!s 1 2",
      "!G 2 c 13 30000 r2",
      "!X 3 a 11 5000",
      "!F 4 b 12",
      "!P 5 8",
    ]);
    // Every line is a valid peer frame.
    for (const line of link.lines) expect(parseRequestLine(line)).toHaveProperty("peer");
  });

  it("counts a standby as synced once it acknowledges its snapshot, and reports lag", () => {
    const { replicator, advance } = replicatorAt();
    advance(100);
    replicator.enabled = true;
    const link = fakeLink();
    replicator.grant("x", 1n, 1000, undefined);
    replicator.sendSnapshot(link, table, 1n);
    expect(replicator.isSynced(link)).toBe(false);
    replicator.acknowledged(link, 1);
    expect(replicator.isSynced(link)).toBe(true);
    replicator.grant("y", 2n, 1000, undefined);
    replicator.grant("z", 3n, 1000, undefined);
    advance(250);
    expect(replicator.lag(link)).toEqual({ ops: 2, sinceAckMs: 250 });
    replicator.disconnected(link);
    expect(replicator.isSynced(link)).toBe(false);
    expect(replicator.lag(link)).toBeUndefined();
  });

  it("ends a handoff at its acknowledgement, and fails it on disconnect or timeout, once", () => {
    const { replicator, advance, timers } = replicatorAt();
    replicator.enabled = true;
    const link = fakeLink();
    replicator.sendSnapshot(link, table, 3n);
    const acked = startHandoff(replicator, link, 3n, 5_000);
    expect(link.lines.at(-1)).toBe("!O 1 3");
    expect(acked()).toBeUndefined();
    replicator.acknowledged(link, 1);
    expect(acked()).toBe(true);

    const dropped = startHandoff(replicator, link, 3n, 5_000);
    replicator.disconnected(link);
    expect(dropped()).toBe(false);

    const unanswered = startHandoff(replicator, fakeLink(), 3n, 1);
    advance(1);
    expect(unanswered()).toBe(false);
    expect(timers.size).toBe(0);
  });

  it("holds changes back while a standby is a window behind, and sends them folded once it acknowledges", async () => {
    const { replicator, advance } = replicatorAt(2, 0);
    replicator.enabled = true;
    const link = fakeLink();
    replicator.sendSnapshot(link, { holders: () => [], keyHolders: () => [] }, 1n);
    replicator.grant("a", 1n, 1_000, "r1"); // seq 1
    replicator.grant("b", 2n, 1_000, undefined); // seq 2: two unacknowledged, the window is full
    replicator.free("a", 1n); // held back from here on
    replicator.grant("a", 3n, 1_000, "r2");
    replicator.free("b", 2n);
    advance(400);
    expect(link.lines).toEqual(["!S 1 0", "!s 0 0", "!G 1 a 1 1000 r1", "!G 2 b 2 1000"]);
    expect(replicator.lag(link)).toEqual({ ops: 5, sinceAckMs: 400 });

    replicator.acknowledged(link, 1); // one behind now: the folded changes go out
    expect(link.lines.slice(4)).toEqual(["!G 5 a 3 600 r2", "!F 5 b 2"]);
    replicator.grant("c", 4n, 1_000, undefined); // seq 6: the window is full again
    expect(link.lines).toHaveLength(6);

    // A handoff never leaves anything behind: it drains first.
    const acked = startHandoff(replicator, link, 1n, 5_000);
    expect(link.lines.slice(6)).toEqual(["!G 6 c 4 1000", "!O 7 1"]);
    replicator.acknowledged(link, 7);
    expect(acked()).toBe(true);
    expect(replicator.lag(link)).toEqual({ ops: 0, sinceAckMs: 0 });
  });

  it("sends folded changes to a standby that stays behind at most once per fold interval", () => {
    {
      const { replicator, advance, timers } = replicatorAt(1, 5);
      replicator.enabled = true;
      const link = fakeLink();
      replicator.sendSnapshot(link, { holders: () => [], keyHolders: () => [] }, 1n);
      replicator.grant("a", 1n, 1_000, undefined); // seq 1 fills the window
      replicator.free("a", 1n); // seq 2, held back
      replicator.acknowledged(link, 1);
      expect(link.lines.slice(2)).toEqual(["!G 1 a 1 1000", "!F 2 a 1"]); // the first send is immediate
      replicator.grant("b", 2n, 1_000, undefined); // seq 3 at 0 ms, held back: 2 is unacknowledged
      advance(2);
      replicator.acknowledged(link, 2);
      expect(link.lines).toHaveLength(4); // 2 ms after the last send: it waits
      advance(3);
      expect(link.lines.slice(4)).toEqual(["!G 3 b 2 995"]);
      replicator.disconnected(link);
      expect(timers.size).toBe(0);
    }
  });

  it("streams live to a standby that keeps up while another one folds", () => {
    const { replicator } = replicatorAt(2, 0);
    replicator.enabled = true;
    const fast = fakeLink();
    const slow = fakeLink();
    const empty = { holders: () => [], keyHolders: () => [] };
    replicator.sendSnapshot(fast, empty, 1n);
    replicator.sendSnapshot(slow, empty, 1n);
    for (let round = 1; round <= 3; round++) {
      replicator.grant("k", BigInt(round), 1_000, undefined);
      replicator.free("k", BigInt(round));
      replicator.acknowledged(fast, replicator.seq);
    }
    expect(fast.lines.slice(2)).toEqual([
      "!G 1 k 1 1000",
      "!F 2 k 1",
      "!G 3 k 2 1000",
      "!F 4 k 2",
      "!G 5 k 3 1000",
      "!F 6 k 3",
    ]);
    expect(slow.lines.slice(2)).toEqual(["!G 1 k 1 1000", "!F 2 k 1"]);
    replicator.acknowledged(slow, 2);
    expect(slow.lines.slice(4)).toEqual(["!F 6 k 3"]);
    expect(replicator.lag(slow)).toEqual({ ops: 4, sinceAckMs: 0 });
  });

  it("wakes a waiter at the next acknowledgement (once it is recorded), or at its timeout", () => {
    const { replicator, advance, timers } = replicatorAt();
    const link = fakeLink();
    replicator.sendSnapshot(link, table, 1n);
    let woken = 0;
    replicator.nextAck(1_000, () => {
      expect(replicator.isSynced(link)).toBe(true);
      woken++;
    });
    replicator.acknowledged(link, 0);
    expect(woken).toBe(1);
    replicator.nextAck(1_000, () => woken++);
    advance(999);
    expect(woken).toBe(1);
    advance(1);
    expect(woken).toBe(2);
    expect(timers.size).toBe(0);
  });

  describe("a large snapshot", () => {
    /** A live table (iterated lazily, like the engine's) and the changes the replicator is told of. */
    function liveTable(size: number) {
      const holders = new Map<string, { token: bigint; id: string | undefined }>();
      for (let i = 0; i < size; i++) holders.set(`k${i}`, { token: BigInt(i + 1), id: `r${i}` });
      const source = {
        *holders() {
          for (const [key, { token, id }] of holders) yield { key, token, remainingMs: 30_000, id };
        },
        keyHolders: () => [],
      };
      return { holders, source };
    }

    /** What a standby ends with: the snapshot, then the changes that follow it. */
    function replay(lines: string[]): Map<string, bigint> {
      const result = new Map<string, bigint>();
      for (const line of lines) {
        const frame = parseRequestLine(line);
        if (!("peer" in frame)) throw new Error(`not a peer frame: ${line}`);
        if (frame.peer === "h" || frame.peer === "G") result.set(frame.key, frame.token);
        if (frame.peer === "F" && result.get(frame.key) === frame.token) result.delete(frame.key);
      }
      return result;
    }

    it("goes out a chunk per turn; changes made meanwhile follow its end, folded", () => {
      const { replicator, timers } = replicatorAt();
      replicator.enabled = true;
      const { holders, source } = liveTable(3 * SNAPSHOT_CHUNK_HOLDERS + 10);
      const link = fakeLink();
      replicator.sendSnapshot(link, source, 4n);
      // The first chunk at once, then nothing more until the event loop turns.
      expect(link.lines).toHaveLength(1 + SNAPSHOT_CHUNK_HOLDERS);
      expect(replicator.isSendingSnapshot(link)).toBe(true);
      // Meanwhile the node serves: a key already sent is freed, one not sent yet is freed and
      // taken again, a new key is granted.
      holders.delete("k0");
      replicator.free("k0", 1n);
      holders.set("k3000", { token: 9_000n, id: "r9" });
      replicator.free("k3000", 3001n);
      replicator.grant("k3000", 9_000n, 30_000, "r9");
      holders.set("new", { token: 9_001n, id: undefined });
      replicator.grant("new", 9_001n, 30_000, undefined);
      replicator.announceEpoch(5n);
      while (replicator.isSendingSnapshot(link)) timers.runDue();
      const end = link.lines.findIndex((line) => line.startsWith("!s "));
      // Nothing but holders inside the snapshot; its count is what was sent.
      expect(link.lines.slice(1, end).every((line) => line.startsWith("!h "))).toBe(true);
      expect(link.lines[end]).toBe(`!s 0 ${end - 1}`);
      // The epoch taken meanwhile is announced after the folded changes, above their seq.
      expect(link.lines.at(-1)).toMatch(/^!P \d+ 5$/);
      const expected = new Map([...holders].map(([key, { token }]) => [key, token]));
      expect(replay(link.lines)).toEqual(expected);
      // Live from then on.
      replicator.acknowledged(link, 0);
      replicator.grant("later", 9_002n, 30_000, undefined);
      expect(link.lines.at(-1)).toMatch(/^!G \d+ later 9002 30000$/);
      expect(timers.size).toBe(0);
    });

    it("waits while its link is backed up, and stops when the link goes", () => {
      const { replicator, clock, timers } = replicatorAt();
      replicator.enabled = true;
      const { source } = liveTable(2 * SNAPSHOT_CHUNK_HOLDERS);
      const link = { ...fakeLink(), queuedBytes: 0 };
      replicator.sendSnapshot(link, source, 4n);
      link.queuedBytes = SNAPSHOT_HIGH_WATER_BYTES + 1;
      const sent = link.lines.length;
      for (let i = 0; i < 5; i++) {
        clock.advance(1);
        timers.runDue();
      }
      expect(link.lines).toHaveLength(sent);
      // No handoff to a peer that has not got the whole table.
      expect(startHandoff(replicator, link, 4n, 1_000)()).toBe(false);
      replicator.disconnected(link);
      expect(timers.size).toBe(0);
      expect(replicator.isStreaming(link)).toBe(false);
    });

    it("drops the connection of a snapshot it stops midway, and only of such a one", () => {
      for (const stop of ["stopAll", "restart"] as const) {
        const { replicator, timers } = replicatorAt();
        replicator.enabled = true;
        const { source } = liveTable(2 * SNAPSHOT_CHUNK_HOLDERS);
        let resets = 0;
        const midway = { ...fakeLink(), reset: () => void resets++ };
        const done = { ...fakeLink(), reset: () => void resets++ };
        replicator.sendSnapshot(midway, source, 4n);
        replicator.sendSnapshot(done, table, 4n);
        expect(replicator.isSendingSnapshot(done)).toBe(false);
        // A demotion (or the peer needs a fresh snapshot): the peer of `midway` got part of one,
        // with no end; on this connection it would refuse the next `!S` and hold that part until then.
        if (stop === "stopAll") replicator.stopAll();
        else for (const link of [midway, done]) replicator.restart(link);
        expect(resets).toBe(1);
        expect(timers.size).toBe(0);
        expect(replicator.isStreaming(midway)).toBe(false);
        expect(replicator.isStreaming(done)).toBe(false);
      }
    });
  });
});
