import type { DecodeError } from "./decode-error.js";
import { FieldReader, splitFields, unknownVerb, withId } from "./field-reader.js";
import { isValidAddress, isValidPeerHex } from "./fields.js";
import type { ProtocolLimits } from "./limits.js";
import type {
  HeartbeatFrame,
  NodeRole,
  PeerChallengeFrame,
  PeerFrame,
  PeerHelloFrame,
  ReplicatedGrantFrame,
  ReplicatedSharedGrantFrame,
  SharedHold,
  SnapshotHolderFrame,
  SnapshotSharedHolderFrame,
} from "./peer.js";

/** The mode and slot of `!q`/`!Q` at `index`, `index + 1`: shared with `-`, or a permit with a slot below its limit. */
function sharedHold(r: FieldReader, index: number): SharedHold {
  const mode = r.lockMode(index);
  const slot = r.slot(index + 1);
  if (mode.kind === "exclusive") r.fail("BAD_ARGUMENT", "an exclusive holder travels as !h or !G");
  else if (mode.kind === "shared" ? slot !== undefined : slot === undefined || slot >= mode.limit)
    r.fail("BAD_ARGUMENT", "the slot must be - for a shared holder and below the limit for a permit");
  return { mode, slot };
}

/** An id field that may be `-` (none). */
function optionalId(r: FieldReader, index: number): string | undefined {
  return r.fields[index] === "-" ? undefined : r.id(index);
}

function isRole(text: string): text is NodeRole {
  return text === "active" || text === "standby";
}

function isFlag(text: string): boolean {
  return text === "0" || text === "1";
}

function isActiveField(text: string): boolean {
  return text === "-" || isValidAddress(text);
}

/** Adds the optional peer protocol version in field `index` (`!N`, `!C`), when the line has one. */
function withVersion<T extends { readonly version?: number }>(frame: T, r: FieldReader, index: number): T {
  if (r.fields.length > index)
    (frame as { version?: number }).version = r.integer(index, "the protocol version");
  return frame;
}

// Each case reads its fields left to right (object literals evaluate in order), so the first bad
// field is the one reported.

/**
 * Parses a peer frame line (`!` and a verb letter). Errors carry op `?` and key `-`: a peer link has
 * no requests to match them to, and a client connection refuses peer frames as a whole.
 */
export function parsePeerLine(line: string, verb: string, limits: ProtocolLimits): PeerFrame | DecodeError {
  // The longest frame (`!Q`) has 8 fields; one more exposes a surplus.
  const r = new FieldReader(splitFields(line, 9), "?", limits.maxKeyBytes, false);
  switch (verb) {
    case "!N":
      return (
        r.expect(3, 4, "!N <node> <nonce> [<version>]") ??
        r.result(
          withVersion<PeerHelloFrame>(
            {
              peer: "N",
              node: r.argument(1, isValidAddress, "the node address"),
              nonce: r.argument(2, isValidPeerHex, "the nonce (64 lowercase hex digits)"),
            },
            r,
            3,
          ),
        )
      );
    case "!C":
      return (
        r.expect(2, 3, "!C <nonce> [<version>]") ??
        r.result(
          withVersion<PeerChallengeFrame>(
            { peer: "C", nonce: r.argument(1, isValidPeerHex, "the nonce (64 lowercase hex digits)") },
            r,
            2,
          ),
        )
      );
    case "!V":
      return (
        r.expect(2, 2, "!V <proof>") ??
        r.result({ peer: "V", proof: r.argument(1, isValidPeerHex, "the proof (64 lowercase hex digits)") })
      );
    case "!J":
      return (
        r.expect(5, 5, "!J <node> <role> <epoch> <highest epoch>") ??
        r.result({
          peer: "J",
          node: r.argument(1, isValidAddress, "the node address"),
          role: r.argument(2, isRole, "the role") as NodeRole,
          epoch: r.epoch(3),
          highest: r.epoch(4),
        })
      );
    case "!B": {
      const wrongCount = r.expect(6, 7, "!B <node> <role> <epoch> <active|-> <highest epoch> [<synced>]");
      if (wrongCount) return wrongCount;
      const node = r.argument(1, isValidAddress, "the node address");
      const role = r.argument(2, isRole, "the role") as NodeRole;
      const epoch = r.epoch(3);
      const active = r.argument(4, isActiveField, "the active address");
      const highest = r.epoch(5);
      const synced =
        r.fields.length > 6 ? r.argument(6, isFlag, "the synced flag (0 or 1)") === "1" : undefined;
      const frame: HeartbeatFrame = {
        peer: "B",
        node,
        role,
        epoch,
        ...(active === "-" ? {} : { active }),
        highest,
        ...(synced === undefined ? {} : { synced }),
      };
      return r.result(frame);
    }
    case "!S":
      return (
        r.expect(3, 3, "!S <epoch> <seq>") ??
        r.result({ peer: "S", epoch: r.epoch(1), seq: r.integer(2, "seq") })
      );
    case "!h":
      return (
        r.expect(4, 5, "!h <key> <token> <remainingMs> [<id>]") ??
        r.result(
          withId<SnapshotHolderFrame>(
            { peer: "h", key: r.key(1), token: r.token(2), remainingMs: r.milliseconds(3, "remainingMs") },
            r.id(4),
          ),
        )
      );
    case "!q": {
      const wrongCount = r.expect(7, 7, "!q <key> <token> <remainingMs> <mode> <slot> <id|->");
      if (wrongCount) return wrongCount;
      const key = r.key(1);
      const token = r.token(2);
      const remainingMs = r.milliseconds(3, "remainingMs");
      const hold = sharedHold(r, 4);
      return r.result(
        withId<SnapshotSharedHolderFrame>({ peer: "q", key, token, remainingMs, ...hold }, optionalId(r, 6)),
      );
    }
    case "!s":
      return (
        r.expect(3, 3, "!s <seq> <count>") ??
        r.result({ peer: "s", seq: r.integer(1, "seq"), count: r.integer(2, "count") })
      );
    case "!G":
      return (
        r.expect(5, 6, "!G <seq> <key> <token> <leaseMs> [<id>]") ??
        r.result(
          withId<ReplicatedGrantFrame>(
            {
              peer: "G",
              seq: r.integer(1, "seq"),
              key: r.key(2),
              token: r.token(3),
              leaseMs: r.milliseconds(4, "leaseMs"),
            },
            r.id(5),
          ),
        )
      );
    case "!Q": {
      const wrongCount = r.expect(8, 8, "!Q <seq> <key> <token> <leaseMs> <mode> <slot> <id|->");
      if (wrongCount) return wrongCount;
      const seq = r.integer(1, "seq");
      const key = r.key(2);
      const token = r.token(3);
      const leaseMs = r.milliseconds(4, "leaseMs");
      const hold = sharedHold(r, 5);
      return r.result(
        withId<ReplicatedSharedGrantFrame>(
          { peer: "Q", seq, key, token, leaseMs, ...hold },
          optionalId(r, 7),
        ),
      );
    }
    case "!F":
      return (
        r.expect(4, 4, "!F <seq> <key> <token>") ??
        r.result({ peer: "F", seq: r.integer(1, "seq"), key: r.key(2), token: r.token(3) })
      );
    case "!X":
      return (
        r.expect(5, 5, "!X <seq> <key> <token> <leaseMs>") ??
        r.result({
          peer: "X",
          seq: r.integer(1, "seq"),
          key: r.key(2),
          token: r.token(3),
          leaseMs: r.milliseconds(4, "leaseMs"),
        })
      );
    case "!P":
    case "!O":
      return (
        r.expect(3, 3, `${verb} <seq> <epoch>`) ??
        r.result({ peer: verb === "!P" ? "P" : "O", seq: r.integer(1, "seq"), epoch: r.epoch(2) })
      );
    case "!K":
      return r.expect(2, 2, "!K <seq>") ?? r.result({ peer: "K", seq: r.integer(1, "seq") });
  }
  return unknownVerb(verb);
}
