import { parseRequestLine } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { nonce, PEER_TOKEN } from "../../net/peer.test.data.js";
import { ListenerHandshake } from "./handshake.js";
import { PeerKey } from "./peer-auth.js";
import { lockModesRefusal, PEER_PROTOCOL_VERSION, peerVersionProblem } from "./peer-version.js";

/** The peer protocol version in the listener's handshake (docs/protocol.md, "Peer protocol versions"). */
const handshake = (oldest?: number) =>
  new ListenerHandshake(new PeerKey(PEER_TOKEN), "b:2", (address) => address === "a:1", oldest);

describe("peer protocol versions", () => {
  it("answers a versioned hello with its own version, and an unversioned one (lockd 0.1.0) without", () => {
    const versioned = handshake().step({
      peer: "N",
      node: "a:1",
      nonce: nonce(),
      version: PEER_PROTOCOL_VERSION,
    });
    expect(versioned.kind).toBe("challenge");
    expect(parseRequestLine((versioned as { line: string }).line.trimEnd())).toMatchObject({
      peer: "C",
      version: PEER_PROTOCOL_VERSION,
    });
    const unversioned = handshake().step({ peer: "N", node: "a:1", nonce: nonce() });
    expect(unversioned.kind).toBe("challenge");
    expect((unversioned as { line: string }).line).toMatch(/^!C [0-9a-f]{64}\n$/);
    // A newer peer is let in: it knows its own window, and refuses this node if it is outside it.
    expect(handshake().step({ peer: "N", node: "a:1", nonce: nonce(), version: 99 }).kind).toBe("challenge");
  });

  it("refuses a peer older than its window with PEER_VERSION_UNSUPPORTED and a reason naming both", () => {
    // What the release after this one does to lockd 0.1.0 (protocol 1, no version field).
    expect(handshake(2).step({ peer: "N", node: "a:1", nonce: nonce() })).toEqual({
      kind: "refused",
      code: "PEER_VERSION_UNSUPPORTED",
      node: "a:1",
      reason: `the peer speaks peer protocol 1 (no version: lockd 0.1.0), older than this node's window (2 to ${PEER_PROTOCOL_VERSION}): upgrade it one release at a time`,
    });
    expect(handshake().step({ peer: "N", node: "a:1", nonce: nonce(), version: 0 })).toMatchObject({
      kind: "refused",
      code: "PEER_VERSION_UNSUPPORTED",
    });
    // Membership is checked first: an outsider learns nothing about the window.
    expect(handshake(2).step({ peer: "N", node: "z:9", nonce: nonce() })).toMatchObject({
      code: "PEER_AUTH_FAILED",
    });
  });

  it("this release links with the previous one (protocol 1) and its own", () => {
    expect(peerVersionProblem(undefined)).toBeUndefined();
    expect(peerVersionProblem(1)).toBeUndefined();
    expect(peerVersionProblem(PEER_PROTOCOL_VERSION)).toBeUndefined();
    expect(peerVersionProblem(0)).toMatch(/older than this node's window/);
  });
});

describe("lockModesRefusal", () => {
  it("refuses shared holders and permits while a linked peer speaks peer protocol 1, not while unknown", () => {
    expect(
      lockModesRefusal([
        { address: "a:1", peerProtocol: 2 },
        { address: "b:1", peerProtocol: undefined },
      ]),
    ).toBe(undefined);
    expect(
      lockModesRefusal([
        { address: "a:1", peerProtocol: 2 },
        { address: "b:1", peerProtocol: 1 },
      ]),
    ).toMatch(/^the cluster node b:1 runs an older lockd \(peer protocol 1\)/);
  });
});
