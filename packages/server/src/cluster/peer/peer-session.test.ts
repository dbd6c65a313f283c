import { isDecodeError, isPeerFrame, type PeerFrame, parseRequestLine } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { PeerSession, type PeerSessionHandler, type SessionFrame, type Snapshot } from "./peer-session.js";
import type { ReceivedHolder } from "./snapshot-holders.js";

const PEER = "10.0.0.1:7420";
const MEMBERS = new Set([PEER, "10.0.0.2:7420", "10.0.0.3:7420"]);
const TOKEN = (1n << 24n) + 1n; // epoch 1, sequence 1

/** A session over a fake transport; `feed` sends wire lines, the record says what got through. */
function session(maxSnapshotHolders?: number) {
  const applied: Array<SessionFrame | (Omit<Snapshot, "holders"> & { holders: ReceivedHolder[] })> = [];
  const violations: string[] = [];
  const sent: string[] = [];
  let dropped: string | undefined;
  const handler: PeerSessionHandler = {
    onPeerFrame: (s, frame) => {
      applied.push(frame);
      if ("seq" in frame) s.acknowledge(frame.seq);
    },
    applySnapshot: (s, snapshot) => {
      const { holders } = snapshot;
      applied.push({
        ...snapshot,
        holders: Array.from({ length: holders.length }, (_, i) => holders.take(i)),
      });
      s.acknowledge(snapshot.seq);
    },
    isMember: (address) => MEMBERS.has(address),
    violated: (_, reason) => violations.push(reason),
  };
  const peerSession = new PeerSession(
    PEER,
    handler,
    {
      send: (line) => sent.push(line.trimEnd()),
      drop: (message) => {
        dropped = message;
      },
      close: () => {},
    },
    maxSnapshotHolders,
  );
  const feed = (...lines: string[]) => {
    for (const line of lines) {
      const frame = parseRequestLine(line);
      if (isDecodeError(frame) || !isPeerFrame(frame)) throw new Error(`not a peer frame: ${line}`);
      peerSession.receive(frame as PeerFrame);
    }
    peerSession.flushAcks();
  };
  return {
    feed,
    applied,
    sent,
    violations,
    get dropped() {
      return dropped;
    },
  };
}

/** A session that joined and took a snapshot of one holder at seq 10. */
function synced() {
  const s = session();
  s.feed(`!J ${PEER} active 5 5`, "!S 5 10", `!h a ${TOKEN} 1000 r1`, "!s 10 1");
  s.applied.length = 0;
  s.sent.length = 0;
  return s;
}

describe("PeerSession", () => {
  it("hands on a join, a whole snapshot at its end, and the stream, acknowledging what was applied", () => {
    const s = session();
    s.feed(`!J ${PEER} active 5 6`, "!S 5 10", `!h a ${TOKEN} 1000 r1`, `!h b ${TOKEN + 1n} 0`);
    // Nothing of a snapshot is applied before its `!s`.
    expect(s.applied).toEqual([{ peer: "J", node: PEER, role: "active", epoch: 5n, highest: 6n }]);
    s.feed("!s 10 2", `!G 11 c ${TOKEN + 2n} 30000 r3`, `!F 11 c ${TOKEN + 2n}`, `!X 12 a ${TOKEN} 5000`);
    expect(s.applied.slice(1)).toEqual([
      {
        epoch: 5n,
        seq: 10,
        holders: [
          { key: "a", token: TOKEN, remainingMs: 1000, id: "r1", mode: undefined, slot: undefined },
          { key: "b", token: TOKEN + 1n, remainingMs: 0, id: undefined, mode: undefined, slot: undefined },
        ],
      },
      { peer: "G", seq: 11, key: "c", token: TOKEN + 2n, leaseMs: 30_000, id: "r3" },
      { peer: "F", seq: 11, key: "c", token: TOKEN + 2n },
      { peer: "X", seq: 12, key: "a", token: TOKEN, leaseMs: 5000 },
    ]);
    // One acknowledgement per read, of the latest applied sequence number.
    expect(s.sent).toEqual(["!K 12"]);
    expect(s.dropped).toBeUndefined();
    s.feed(`!B ${PEER} active 5 ${PEER} 6`, "!P 13 7", "!O 14 7");
    expect(s.applied.slice(-3).map((frame) => ("peer" in frame ? frame.peer : "snapshot"))).toEqual([
      "B",
      "P",
      "O",
    ]);
  });

  const violations: Array<[string, () => ReturnType<typeof session>, string[]]> = [
    ["a frame before !J", session, ["!S 5 10"]],
    ["a second !J", synced, [`!J ${PEER} active 5 5`]],
    ["!J claiming another node", session, ["!J 10.0.0.2:7420 active 5 5"]],
    ["!B claiming another node", synced, ["!B 10.0.0.2:7420 active 5 - 5"]],
    ["!B naming an active outside --peers", synced, [`!B ${PEER} standby 5 10.9.9.9:7420 5`]],
    ["an epoch above the sender's highest", synced, [`!B ${PEER} active 9 - 5`]],
    ["a handshake frame", synced, [`!N ${PEER} ${"a".repeat(64)}`]],
    ["a proof after the handshake", synced, [`!V ${"a".repeat(64)}`]],
    ["an acknowledgement", synced, ["!K 10"]],
    ["!h outside a snapshot", synced, [`!h injected ${TOKEN} 86400000 evil`]],
    ["!s without !S", synced, ["!s 10 0"]],
    [
      "more !h than this node can hold",
      () => session(1),
      [`!J ${PEER} active 5 5`, "!S 5 20", `!h a ${TOKEN} 1`, `!h b ${TOKEN} 1`],
    ],
    ["!s counting more !h than came", synced, ["!S 5 20", `!h a ${TOKEN} 1`, "!s 20 2"]],
    ["!s counting fewer !h than came", synced, ["!S 5 20", `!h a ${TOKEN} 1`, `!h b ${TOKEN} 1`, "!s 20 1"]],
    ["a key twice in a snapshot", synced, ["!S 5 20", `!h a ${TOKEN} 1`, `!h a ${TOKEN} 2`]],
    ["!s with another seq than !S", synced, ["!S 5 20", "!s 21 0"]],
    ["!S inside a snapshot", synced, ["!S 5 20", "!S 5 20"]],
    ["a change inside a snapshot", synced, ["!S 5 20", `!G 21 k ${TOKEN} 1`]],
    ["a change before any snapshot", session, [`!J ${PEER} active 5 5`, `!G 1 k ${TOKEN} 1`]],
    ["a handoff before any snapshot", session, [`!J ${PEER} active 5 5`, "!O 1 1000"]],
    ["a sequence number going backwards", synced, [`!G 11 k ${TOKEN} 1`, `!F 10 k ${TOKEN}`]],
    ["a snapshot older than the stream", synced, ["!S 5 9"]],
    ["a lease beyond the longest timer", synced, [`!G 11 k ${TOKEN} 2147483648`]],
    ["a remaining lease beyond the longest timer", synced, ["!S 5 20", `!h a ${TOKEN} 2147483648`]],
    ["a token no grant has", synced, [`!G 11 k ${1n << 24n} 1`]],
  ];

  it.each(violations)("drops the link on %s, applying nothing of it", (_, make, lines) => {
    const s = make();
    const before = s.applied.length;
    s.feed(...lines);
    expect(s.dropped).toBeDefined();
    expect(s.violations).toEqual([s.dropped]);
    // Frames before the bad one may have applied, but not the bad one, nor any part of a snapshot.
    const bad = parseRequestLine(lines.at(-1)!);
    expect(s.applied.slice(before)).not.toContainEqual(bad);
    expect(s.applied.slice(before).some((frame) => "holders" in frame)).toBe(false);
    // Nothing is read, applied or acknowledged after the drop.
    const [applied, sent] = [s.applied.length, s.sent.length];
    s.feed(`!G 99 late ${TOKEN} 1`);
    expect([s.applied.length, s.sent.length]).toEqual([applied, sent]);
  });

  it("accepts changes stamped with the same sequence number (a folded catch-up)", () => {
    const s = synced();
    s.feed(`!G 15 a ${TOKEN} 1`, `!G 15 b ${TOKEN} 1`, `!F 15 c ${TOKEN}`);
    expect(s.dropped).toBeUndefined();
    expect(s.applied).toHaveLength(3);
  });
});
