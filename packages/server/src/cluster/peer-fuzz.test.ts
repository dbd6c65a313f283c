import {
  encodePeer,
  isDecodeError,
  isPeerFrame,
  isValidEpoch,
  type PeerFrame,
  parseRequestLine,
  tokenSequence,
} from "@lock/protocol";
import type { LineClient } from "@lock/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isImplausibleEpoch } from "../epoch/epoch-plan.js";
import { TIMER_MAX_MS } from "../limits.js";
import { dialAsPeer, FAKE_PEER, nonce, SELF, serveNode } from "../net/peer.test.data.js";
import { client } from "../net/serve.test.data.js";
import type { LockServer } from "../net/server.js";

/**
 * A socket-level fuzz of the peer protocol against a cluster node in this process: random and
 * mutated `!` frames, from plain client connections and from an authenticated peer. The node must
 * never crash (an exception here fails the test), never let a client connection change anything,
 * and from a peer apply exactly the frames the protocol allows, dropping the link at the first
 * other one (docs/protocol.md, "Peer frames"). A fixed seed and few runs keep it fast and repeatable.
 */

const EPOCH = 5n;
const TOKEN = (EPOCH << 24n) + 1n;
const MEMBERS = new Set([FAKE_PEER, SELF]);

/** What a node exposes that a forged or broken frame could change. */
function state(server: LockServer) {
  const node = server.node;
  return {
    role: node.role,
    epoch: node.epoch,
    highest: node.highestEpoch,
    active: node.activeAddress,
    table: tableOf(server),
  };
}

function tableOf(server: LockServer): Map<string, bigint> {
  return new Map([...server.node.holders()].map((holder) => [holder.key, holder.token]));
}

/** The node still answers, and what it says is sane. */
async function expectSane(server: LockServer): Promise<void> {
  const c = await client(server);
  const info = await c.request("I");
  c.close();
  const fields = Object.fromEntries(
    info
      .split(" ")
      .slice(1)
      .map((field) => field.split("=")),
  );
  expect(fields.role).toMatch(/^(active|standby)$/);
  expect(isValidEpoch(BigInt(fields.epoch))).toBe(true);
  expect(Number(fields.keys)).toBe(server.node.keyCount);
  expect(isImplausibleEpoch(server.node.highestEpoch, Date.now())).toBe(false);
}

/** Reads until `!K <seq>` (the link is alive and applied everything) or the close (dropped). */
async function outcome(c: LineClient, barrier: number): Promise<{ dropped: boolean; lines: string[] }> {
  const lines: string[] = [];
  for (;;) {
    let line: string;
    try {
      line = await c.next();
    } catch {
      return { dropped: true, lines };
    }
    lines.push(line);
    if (line === `!K ${barrier}`) return { dropped: false, lines };
  }
}

const KEYS = ["a", "b", "c", "d", "e"];
const GARBAGE = [
  "a",
  "",
  "-1",
  "0",
  "x",
  "18446744073709551615",
  "18446744073709551616",
  "2147483648",
  "1099511627775",
  "1099511627776",
  "9007199254740992",
  "\u0001",
  "é",
  FAKE_PEER,
  "127.0.0.1:9",
  "active",
  "-",
];
const VERBS = ["!h", "!s", "!S", "!K", "!N", "!C", "!V", "!J", "!Z", "!", "A", "P", "H"];

type Mutation =
  | { readonly kind: "field"; readonly index: number; readonly value: string }
  | { readonly kind: "verb"; readonly verb: string }
  | { readonly kind: "backwards"; readonly by: number }
  | { readonly kind: "truncate" }
  | { readonly kind: "extend"; readonly value: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant("field"),
    index: fc.integer({ min: 1, max: 5 }),
    value: fc.constantFrom(...GARBAGE),
  }),
  fc.record({ kind: fc.constant("verb"), verb: fc.constantFrom(...VERBS) }),
  fc.record({ kind: fc.constant("backwards"), by: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant("truncate") }),
  fc.record({ kind: fc.constant("extend"), value: fc.constantFrom(...GARBAGE) }),
) as fc.Arbitrary<Mutation>;

/**
 * One step of a peer's stream, perhaps mutated on the wire: a change (`!G`, `!F`, `!X`, `!P`) with
 * sequence number `seq + seqStep`, a heartbeat, a whole snapshot (`!S`, `!h`…, `!s`), or a lone
 * snapshot frame or second `!J`, which is out of place.
 */
interface Step {
  readonly verb: "G" | "F" | "X" | "P" | "B" | "snapshot" | "S" | "h" | "s" | "J";
  readonly key: string;
  readonly tokenOffset: bigint;
  readonly leaseMs: number;
  readonly seqStep: number;
  /** For a whole snapshot: how it is broken, if at all. */
  readonly snapshotFault: SnapshotFault | undefined;
  readonly mutation: Mutation | undefined;
}

type SnapshotFault =
  | "count+1"
  | "count-1"
  | "extra !h"
  | "key twice"
  | "!s seq"
  | "!S inside"
  | "change inside";

const step: fc.Arbitrary<Step> = fc.record({
  verb: fc.oneof(
    { arbitrary: fc.constantFrom("G", "F", "X", "P", "B"), weight: 10 },
    { arbitrary: fc.constant("snapshot"), weight: 3 },
    { arbitrary: fc.constantFrom("S", "h", "s", "J"), weight: 1 },
  ),
  key: fc.constantFrom(...KEYS),
  tokenOffset: fc.bigInt({ min: 0n, max: 20n }),
  // Invalid values are rare, so that runs often get some way before a bad frame.
  leaseMs: fc.oneof(
    { arbitrary: fc.constantFrom(0, 1, 30_000, TIMER_MAX_MS), weight: 12 },
    { arbitrary: fc.constant(TIMER_MAX_MS + 1), weight: 1 },
  ),
  seqStep: fc.oneof(
    { arbitrary: fc.constant(-1), weight: 1 },
    { arbitrary: fc.constant(0), weight: 4 },
    { arbitrary: fc.constantFrom(1, 2), weight: 8 },
  ),
  snapshotFault: fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 5 },
    {
      arbitrary: fc.constantFrom<SnapshotFault>(
        "count+1",
        "count-1",
        "extra !h",
        "key twice",
        "!s seq",
        "!S inside",
        "change inside",
      ),
      weight: 2,
    },
  ),
  mutation: fc.oneof({ arbitrary: fc.constant(undefined), weight: 8 }, { arbitrary: mutation, weight: 1 }),
});

function mutate(line: string, m: Mutation, lastSeq: number): string {
  const fields = line.split(" ");
  switch (m.kind) {
    case "field":
      if (m.index < fields.length) fields[m.index] = m.value;
      break;
    case "verb":
      fields[0] = m.verb;
      break;
    case "backwards":
      // Only G, F, X, P carry a sequence number first.
      if (/^!(G|F|X|P)$/.test(fields[0]!)) fields[1] = String(Math.max(0, lastSeq - m.by));
      break;
    case "truncate":
      fields.pop();
      break;
    case "extend":
      fields.push(m.value);
      break;
  }
  return fields.join(" ");
}

/**
 * The peer protocol's rules for the listening side (docs/protocol.md), as a model: whether a line
 * may be applied after the frames before it, and what the holder table then is.
 */
class StreamModel {
  table = new Map<string, bigint>();
  lastSeq: number;
  /** A snapshot completed on this link: changes may follow. */
  synced = true;
  snapshot: { seq: number; table: Map<string, bigint> } | undefined;

  constructor(table: Map<string, bigint>, seq: number) {
    this.table = new Map(table);
    this.lastSeq = seq;
  }

  /** Applies `line`; false if the node must drop the link on it (nothing of it applied). */
  apply(line: string): boolean {
    const frame = parseRequestLine(line);
    if (isDecodeError(frame) || !isPeerFrame(frame)) return false;
    return this.#apply(frame);
  }

  #apply(frame: PeerFrame): boolean {
    const tokenOk = (token: bigint) => tokenSequence(token) !== 0n;
    const snapshot = this.snapshot;
    switch (frame.peer) {
      case "B":
        return (
          frame.node === FAKE_PEER &&
          frame.epoch <= frame.highest &&
          (frame.active === undefined || MEMBERS.has(frame.active))
        );
      case "S":
        if (snapshot || frame.seq < this.lastSeq) return false;
        this.lastSeq = frame.seq;
        this.snapshot = { seq: frame.seq, table: new Map() };
        return true;
      case "h":
        if (!snapshot || snapshot.table.has(frame.key)) return false;
        if (!tokenOk(frame.token) || frame.remainingMs > TIMER_MAX_MS) return false;
        snapshot.table.set(frame.key, frame.token);
        return true;
      case "s":
        if (!snapshot || snapshot.table.size !== frame.count || frame.seq !== snapshot.seq) return false;
        this.table = snapshot.table;
        this.snapshot = undefined;
        this.synced = true;
        return true;
      case "G":
      case "X":
      case "F":
      case "P":
        if (snapshot || !this.synced || frame.seq < this.lastSeq) return false;
        if (frame.peer !== "P" && !tokenOk(frame.token)) return false;
        if ((frame.peer === "G" || frame.peer === "X") && frame.leaseMs > TIMER_MAX_MS) return false;
        this.lastSeq = frame.seq;
        if (frame.peer === "F") this.table.delete(frame.key);
        else if (frame.peer !== "P") this.table.set(frame.key, frame.token);
        return true;
      default:
        // A second !J (the first was the link's own), !O (never generated), and the handshake
        // and acknowledgement frames.
        return false;
    }
  }
}

/**
 * The lines of step `s` with sequence number `seq`: well-formed, though not always in place (a
 * lease past the longest timer, `!h` outside a snapshot). A mutation changes one of them.
 */
function stepLines(s: Step, seq: number): string[] {
  const token = TOKEN + s.tokenOffset;
  const lease = s.leaseMs;
  const frames: PeerFrame[] = [];
  switch (s.verb) {
    case "G":
      frames.push({ peer: "G", seq, key: s.key, token, leaseMs: lease, id: `r${s.tokenOffset}` });
      break;
    case "F":
      frames.push({ peer: "F", seq, key: s.key, token });
      break;
    case "X":
      frames.push({ peer: "X", seq, key: s.key, token, leaseMs: lease });
      break;
    case "P":
      frames.push({ peer: "P", seq, epoch: EPOCH });
      break;
    case "B":
      frames.push({
        peer: "B",
        node: FAKE_PEER,
        role: "active",
        epoch: EPOCH,
        active: FAKE_PEER,
        highest: EPOCH,
      });
      break;
    case "J":
      frames.push({ peer: "J", node: FAKE_PEER, role: "active", epoch: EPOCH, highest: EPOCH });
      break;
    case "snapshot": {
      const count = 1 + Number(s.tokenOffset % 3n);
      const fault = s.snapshotFault;
      const announced = fault === "count+1" ? count + 1 : fault === "count-1" ? count - 1 : count;
      frames.push({ peer: "S", epoch: EPOCH, seq });
      for (let i = 0; i < count + (fault === "extra !h" ? 1 : 0); i++) {
        const key = KEYS[(KEYS.indexOf(s.key) + (fault === "key twice" ? 0 : i)) % KEYS.length]!;
        frames.push({ peer: "h", key, token: token + BigInt(i), remainingMs: lease });
        if (i === 0 && fault === "!S inside") frames.push({ peer: "S", epoch: EPOCH, seq });
        if (i === 0 && fault === "change inside") frames.push({ peer: "F", seq, key, token });
      }
      frames.push({ peer: "s", seq: fault === "!s seq" ? seq + 1 : seq, count: announced });
      break;
    }
    case "S":
      frames.push({ peer: "S", epoch: EPOCH, seq });
      break;
    case "h":
      frames.push({ peer: "h", key: s.key, token, remainingMs: lease });
      break;
    case "s":
      frames.push({ peer: "s", seq, count: Number(s.tokenOffset % 3n) });
      break;
  }
  const lines = frames.map((frame) => encodePeer(frame).trimEnd());
  if (s.mutation) {
    const at = Number(s.tokenOffset) % lines.length;
    lines[at] = mutate(lines[at]!, s.mutation, seq);
  }
  return lines;
}

describe("peer protocol fuzz", () => {
  it("peer frames from client connections never change a node", async () => {
    const { server } = await serveNode();
    const before = state(server);
    const anyFrame = fc.oneof(
      fc.constantFrom(
        `!J ${FAKE_PEER} active 1 1`,
        "!S 1 0",
        "!s 0 0",
        "!O 1 1000",
        `!h injected 1 86400000 evil`,
        `!B ${FAKE_PEER} active 1 ${FAKE_PEER} 1`,
        "!B 127.0.0.1:37432 standby 18446744073709551615 - 1",
        `!G 1 k ${TOKEN} 30000`,
        `!V ${"0".repeat(64)}`,
        `!C ${"0".repeat(64)}`,
        "!K 1",
      ),
      fc.constant(null).map(() => `!N ${FAKE_PEER} ${nonce()}`),
    );
    const line = fc
      .tuple(anyFrame, fc.option(mutation, { nil: undefined }))
      .map(([text, m]) => (m ? mutate(text, m, 1) : text));
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (lines, served) => {
          const c = await client(server);
          if (served) expect(await c.request("P first")).toBe("P first");
          c.send([...lines, "P sync"].join("\n"));
          const replies: string[] = [];
          for (;;) {
            let reply: string;
            try {
              reply = await c.next();
            } catch {
              break;
            }
            if (reply === "P sync") break;
            replies.push(reply);
          }
          c.close();
          // Nothing acknowledged, nothing proved: at most a challenge, then a refusal or a parse error.
          for (const reply of replies)
            expect(reply).toMatch(/^(!C [0-9a-f]{64}( \d+)?|E \S+ \S+ [A-Z_]+ .*)$/);
          expect(state(server)).toEqual(before);
        },
      ),
      { numRuns: 30, seed: 1701 },
    );
    await expectSane(server);
  });

  it("an authenticated peer's frames apply exactly as the protocol allows, and the first bad one drops the link", async () => {
    const { server } = await serveNode();
    let runs = 0;
    let drops = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.uniqueArray(fc.constantFrom(...KEYS), { maxLength: 4 }), { freq: 6, nil: undefined }),
        fc.array(step, { minLength: 1, maxLength: 10 }),
        async (snapshotKeys, steps) => {
          runs += 1;
          const peer = await dialAsPeer(server);
          const seq0 = 1000 * runs;
          // Without a first snapshot, the stream is out of place until one completes.
          const initial = new Map((snapshotKeys ?? []).map((key, i) => [key, TOKEN + BigInt(i)]));
          const lines = [
            encodePeer({ peer: "J", node: FAKE_PEER, role: "active", epoch: EPOCH, highest: EPOCH }),
            ...(snapshotKeys === undefined
              ? []
              : [
                  encodePeer({ peer: "S", epoch: EPOCH, seq: seq0 }),
                  ...[...initial].map(([key, token]) =>
                    encodePeer({ peer: "h", key, token, remainingMs: 30_000 }),
                  ),
                  encodePeer({ peer: "s", seq: seq0, count: initial.size }),
                ]),
          ].map((text) => text.trimEnd());
          const model = new StreamModel(tableOf(server), snapshotKeys === undefined ? -1 : seq0);
          if (snapshotKeys !== undefined) model.table = new Map(initial);
          model.synced = snapshotKeys !== undefined;
          let seq = seq0;
          let alive = true;
          let tableAtDrop = new Map<string, bigint>();
          for (const s of steps) {
            if (s.verb !== "h") seq = Math.max(0, seq + s.seqStep);
            for (const text of stepLines(s, seq)) {
              lines.push(text);
              if (alive && !model.apply(text)) {
                alive = false;
                tableAtDrop = new Map(model.table);
              }
            }
          }
          const barrier = seq + 1;
          const last = `!P ${barrier} ${EPOCH}`;
          lines.push(last);
          if (alive && !model.apply(last)) {
            alive = false;
            tableAtDrop = new Map(model.table);
          }
          peer.send(lines.join("\n"));
          const result = await outcome(peer, barrier);
          peer.close();
          // A snapshot that completed before the drop is still loaded, a slice per turn.
          while (server.cluster?.loadingSnapshot) await new Promise((resolve) => setImmediate(resolve));
          expect(result.dropped, lines.join("\n")).toBe(!alive);
          if (result.dropped) {
            drops += 1;
            expect(result.lines.at(-1)).toMatch(/^E \? - PEER_PROTOCOL_ERROR - /);
          }
          expect(tableOf(server), lines.join("\n")).toEqual(alive ? model.table : tableAtDrop);
          expect(server.node.role).toBe("standby");
        },
      ),
      { numRuns: 200, seed: 2024 },
    );
    // The runs covered both outcomes.
    expect(drops).toBeGreaterThan(0);
    expect(drops).toBeLessThan(runs);
    await expectSane(server);
  });
});
