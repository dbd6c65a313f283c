import { describe, expect, it } from "vitest";
import { nonce, PEER_TOKEN, peerProof } from "../../net/peer.test.data.js";
import { PeerKey } from "./peer-auth.js";

describe("PeerKey", () => {
  it("computes the documented HMAC-SHA256 proofs and checks them in both roles", () => {
    const key = new PeerKey(PEER_TOKEN);
    const transcript = { dialer: "a:1", listener: "b:2", dialerNonce: nonce(), listenerNonce: nonce() };
    const { dialer, listener, dialerNonce, listenerNonce } = transcript;
    const dialerProof = peerProof(PEER_TOKEN, "dialer", dialer, listener, dialerNonce, listenerNonce);
    expect(key.proof("dialer", transcript)).toBe(dialerProof);
    expect(key.verify("dialer", transcript, dialerProof)).toBe(true);
    // A proof is bound to its side, both addresses and both nonces.
    expect(key.verify("listener", transcript, dialerProof)).toBe(false);
    expect(key.verify("dialer", { ...transcript, dialer: "c:3" }, dialerProof)).toBe(false);
    expect(key.verify("dialer", { ...transcript, listenerNonce: nonce() }, dialerProof)).toBe(false);
    expect(new PeerKey("another-token-of-the-cluster").verify("dialer", transcript, dialerProof)).toBe(false);
    expect(new PeerKey(undefined).insecure).toBe(true);
    expect(key.insecure).toBe(false);
  });

  it("with a coordinator, binds every proof to the cluster's name: a node without one, or of another cluster, cannot join", () => {
    const transcript = { dialer: "a:1", listener: "b:2", dialerNonce: nonce(), listenerNonce: nonce() };
    const eu = new PeerKey(PEER_TOKEN, undefined, "eu-1");
    const proof = eu.proof("dialer", transcript);
    expect(new PeerKey(PEER_TOKEN, undefined, "eu-1").verify("dialer", transcript, proof)).toBe(true);
    expect(new PeerKey(PEER_TOKEN).verify("dialer", transcript, proof)).toBe(false);
    expect(new PeerKey(PEER_TOKEN, undefined, "eu-2").verify("dialer", transcript, proof)).toBe(false);
    expect(eu.coordinated).toBe(true);
    expect(new PeerKey(PEER_TOKEN).coordinated).toBe(false);
  });
});
