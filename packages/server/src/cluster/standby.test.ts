import { isDecodeError, isPeerFrame, parseRequestLine } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { Membership } from "./membership.js";
import { PeerSession } from "./peer/peer-session.js";
import { standbyTable } from "./replica.test.data.js";
import { Standby } from "./standby.js";

const ACTIVE = "10.0.0.1:7420";
const SELF = "10.0.0.2:7420";
const TIMING = { heartbeatMs: 100, peerTimeoutMs: 500 };
const TOKEN = (5n << 24n) + 1n; // epoch 5, sequence 1

/**
 * A standby on a manual clock: the real Standby, Replica and PeerSession, a standby engine, and
 * a link from the active whose lines (its acknowledgements) are recorded. Loads go two holders a
 * millisecond, so a snapshot of a few holders spans several turns.
 */
function standbyNode() {
  const { clock, timers, table, turn } = standbyTable(1_000);
  const membership = new Membership([ACTIVE, SELF], SELF, TIMING, clock);
  const standby = new Standby(table, {
    membership,
    serving: () => false,
    learn: () => {},
    redirectPending: () => {},
    follow: () => {},
    now: () => clock.now(),
    timers,
    loadPacing: { perTurn: 2, turnMs: Number.POSITIVE_INFINITY, pauseMs: 1 },
  });
  const link = () => {
    const sent: string[] = [];
    let closed = false;
    const session = new PeerSession(
      ACTIVE,
      {
        onPeerFrame: (s, frame) => {
          if (frame.peer === "J") standby.joined(s);
          else if (frame.peer !== "B") handoffs.push(standby.receive(s, frame));
        },
        applySnapshot: (s, snapshot) => standby.applySnapshot(s, snapshot),
        isMember: () => true,
        violated: (_s, reason) => {
          throw new Error(reason);
        },
      },
      {
        send: (line) => sent.push(line.trimEnd()),
        drop: (reason) => {
          throw new Error(reason);
        },
        close: () => {
          closed = true;
        },
      },
    );
    /** One read of the link: its lines, then its acknowledgements. */
    const read = (...lines: string[]) => {
      for (const line of lines) {
        const frame = parseRequestLine(line);
        if (isDecodeError(frame) || !isPeerFrame(frame)) throw new Error(`not a peer frame: ${line}`);
        session.receive(frame);
      }
      session.flushAcks();
    };
    read(`!J ${ACTIVE} active 5 5`);
    return {
      session,
      sent,
      read,
      get closed() {
        return closed;
      },
    };
  };
  const handoffs: string[] = [];
  /** The active's heartbeat: it is live, and the active. */
  const heartbeat = () => membership.heard(ACTIVE, "active", 5n, undefined);
  const untilLoaded = () => {
    for (let i = 0; i < 2_000 && standby.loading; i++) turn();
    expect(standby.loading).toBe(false);
  };
  return { clock, table, standby, link, heartbeat, turn, untilLoaded, handoffs };
}

/** `!S`, `count` holders `k0`…, `!s`, at replication sequence `seq`. */
function snapshotLines(seq: number, count: number): string[] {
  const holders = Array.from({ length: count }, (_, i) => `!h k${i} ${TOKEN + BigInt(i)} 60000 r${i}`);
  return [`!S 5 ${seq}`, ...holders, `!s ${seq} ${count}`];
}

const keysOf = (table: ReturnType<typeof standbyNode>["table"]) => [...table.holders()].map((h) => h.key);

describe("Standby loading a snapshot", () => {
  it("acknowledges the snapshot only once it is whole in the table: the active counts it synced only then", () => {
    const { table, standby, link, turn, untilLoaded } = standbyNode();
    const active = link();
    active.read(...snapshotLines(10, 7));
    expect(standby.loading).toBe(true);
    expect(standby.source).toBeUndefined();
    expect(standby.syncedFromActive).toBe(false);
    turn();
    turn();
    expect(table.keyCount).toBe(2);
    expect(active.sent).toEqual([]);
    untilLoaded();
    expect(table.keyCount).toBe(7);
    expect(active.sent).toEqual(["!K 10"]);
    expect(standby.source).toBe(ACTIVE);
    expect(standby.syncedFromActive).toBe(true);
  });

  it("applies the changes that follow the snapshot on its link after it, and acknowledges them only then", () => {
    const { table, standby, link, turn, untilLoaded } = standbyNode();
    const active = link();
    // The snapshot and the first changes after it in one read, as a fast active sends them.
    active.read(...snapshotLines(10, 6), `!F 11 k5 ${TOKEN + 5n}`, `!G 12 k5 ${TOKEN + 9n} 30000 r9`);
    turn();
    turn();
    expect(table.holder("k5")).toBeUndefined();
    // The free of a holder installed already waits too: nothing overtakes the snapshot.
    active.read(`!F 13 k0 ${TOKEN}`, "!P 14 6");
    expect(table.holder("k0")?.token).toBe(TOKEN);
    expect(active.sent).toEqual([]);
    untilLoaded();
    expect(keysOf(table)).toEqual(["k1", "k2", "k3", "k4", "k5"]);
    expect(table.holder("k5")).toMatchObject({ token: TOKEN + 9n, id: "r9" });
    expect(active.sent).toEqual(["!K 14"]);
    expect(standby.grantsApplied).toBe(1);
    // Streaming as usual from then on.
    active.read(`!F 15 k5 ${TOKEN + 9n}`);
    expect(keysOf(table)).toEqual(["k1", "k2", "k3", "k4"]);
    expect(active.sent).toEqual(["!K 14", "!K 15"]);
  });

  it("takes no handoff, and nothing from another link, while it loads", () => {
    const { table, standby, link, untilLoaded, handoffs } = standbyNode();
    const first = link();
    first.read(...snapshotLines(10, 4));
    const other = link();
    other.read("!S 5 20", "!s 20 0");
    // The second link's (empty) snapshot replaced the first's load: the first link's frames are ignored.
    first.read(`!G 11 x ${TOKEN + 20n} 30000`, "!O 12 6");
    expect(handoffs).toEqual(["ignored", "ignored"]);
    other.read("!O 21 6");
    expect(handoffs).toEqual(["ignored", "ignored", "ignored"]);
    untilLoaded();
    expect(table.keyCount).toBe(0);
    expect(first.sent).toEqual([]);
    // The handoff was not acknowledged: the active's times out and it stays the active.
    expect(other.sent).toEqual(["!K 20"]);
    expect(standby.source).toBe(ACTIVE);
  });

  it("a second snapshot during a load replaces it: the first is never acknowledged, the second is", () => {
    const { table, link, turn, untilLoaded } = standbyNode();
    const first = link();
    first.read(...snapshotLines(10, 8));
    turn();
    turn();
    const second = link();
    second.read("!S 5 30", `!h z ${TOKEN + 30n} 60000`, "!s 30 1", `!G 31 y ${TOKEN + 31n} 60000`);
    untilLoaded();
    expect(keysOf(table)).toEqual(["z", "y"]);
    expect(first.sent).toEqual([]);
    expect(second.sent).toEqual(["!K 31"]);
  });

  it("calls what waits for the load (a promotion) once it is done, however many snapshots replaced it", () => {
    const { table, standby, link, turn, untilLoaded } = standbyNode();
    const done: number[] = [];
    standby.afterLoad(() => done.push(table.keyCount));
    expect(done).toEqual([0]);
    link().read(...snapshotLines(10, 6));
    standby.afterLoad(() => done.push(table.keyCount));
    turn();
    link().read(...snapshotLines(20, 3));
    standby.afterLoad(() => done.push(table.keyCount));
    expect(done).toEqual([0]);
    untilLoaded();
    expect(done).toEqual([0, 3, 3]);
  });

  it("does not drop the active's link for a mismatch while it loads the active's snapshot", () => {
    const { standby, link, heartbeat, turn, untilLoaded } = standbyNode();
    heartbeat();
    const active = link();
    active.read(...snapshotLines(10, 2_000));
    // Two holders a millisecond: a second of turns, twice the peer timeout, heartbeats every 100 ms.
    for (let ms = 0; ms < 1_500 && standby.loading; ms += 100) {
      for (let i = 0; i < 100; i++) turn();
      heartbeat();
      standby.resyncFromActive();
    }
    expect(active.closed).toBe(false);
    untilLoaded();
    standby.resyncFromActive();
    expect(active.closed).toBe(false);
    expect(active.sent).toEqual(["!K 10"]);
  });
});
