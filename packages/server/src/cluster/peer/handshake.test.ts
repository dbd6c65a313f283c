import { isDecodeError, isPeerFrame, type PeerFrame, parseRequestLine } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import type { ClusterLink, LinkEvents } from "../link.js";
import { ListenerHandshake } from "./handshake.js";
import { OutgoingSession } from "./outgoing-session.js";
import { PeerKey } from "./peer-auth.js";

const DIALER = "10.0.0.2:7420";
const LISTENER = "10.0.0.1:7420";

function frame(line: string): PeerFrame {
  const parsed = parseRequestLine(line.trimEnd());
  if (isDecodeError(parsed) || !isPeerFrame(parsed)) throw new Error(`not a peer frame: ${line}`);
  return parsed;
}

/** An OutgoingSession with its writes and the link events it raised recorded. */
function dialer(key: PeerKey, authToken?: string) {
  const written: string[] = [];
  const events: string[] = [];
  let dropped = false;
  const link = {} as ClusterLink;
  const linkEvents: LinkEvents = {
    hello: () => "!J hello\n",
    onConnect: () => events.push("connect"),
    onDisconnect: () => events.push("disconnect"),
    onAck: (_, seq) => events.push(`ack ${seq}`),
    onRefused: (_, line) => events.push(`refused ${line}`),
    onViolation: (_, reason) => events.push(`violation ${reason}`),
  };
  const session = new OutgoingSession({ key, self: DIALER, peer: LISTENER, authToken }, link, linkEvents, {
    write: (lines) => written.push(lines),
    connected: () => events.push("connected"),
    drop: () => {
      dropped = true;
    },
  });
  return { session, written, events, dropped: () => dropped };
}

/** Runs both pure sides against each other until the dialer is connected or refused. */
function handshake(dialerKey: PeerKey, listenerKey: PeerKey) {
  const dialing = dialer(dialerKey);
  const listener = new ListenerHandshake(listenerKey, LISTENER, (address) => address === DIALER);
  dialing.session.open();
  const challenge = listener.step(frame(dialing.written.at(-1)!));
  expect(challenge.kind).toBe("challenge");
  if (challenge.kind !== "challenge") throw new Error("no challenge");
  dialing.session.receive(challenge.line.trimEnd());
  const proved = listener.step(frame(dialing.written.at(-1)!));
  if (proved.kind === "authenticated") dialing.session.receive(proved.line.trimEnd());
  return { dialing, proved };
}

describe("the peer handshake, both sides without sockets", () => {
  it("completes with the same key, then passes acknowledgements that never go backwards", () => {
    const key = new PeerKey("the-cluster-peer-token");
    const { dialing, proved } = handshake(key, key);
    expect(proved).toMatchObject({ kind: "authenticated", node: DIALER });
    expect(dialing.events).toEqual(["connected", "connect"]);
    expect(dialing.written.at(-1)).toBe("!J hello\n");
    expect(dialing.session.receive("!K 3")).toBe(true);
    expect(dialing.session.receive("!K 2")).toBe(false);
    expect(dialing.events.slice(2)).toEqual(["ack 3", "violation !K 2 after !K 3"]);
    expect(dialing.dropped()).toBe(true);
  });

  it("fails on either side with different keys", () => {
    const { dialing, proved } = handshake(
      new PeerKey("one-token-of-a-cluster"),
      new PeerKey("another-token"),
    );
    expect(proved).toMatchObject({ kind: "refused", code: "PEER_AUTH_FAILED", node: DIALER });
    expect(dialing.events).toEqual([]);
  });

  it("refuses a listener that does not prove the token, and error lines", () => {
    const dialing = dialer(new PeerKey("the-cluster-peer-token"), "client-secret");
    dialing.session.open();
    expect(dialing.written[0]).toMatch(/^H client-secret\n!N 10\.0\.0\.2:7420 [0-9a-f]{64} 2\n$/);
    expect(dialing.session.receive("H")).toBe(true);
    expect(dialing.session.receive(`!C ${"0".repeat(64)}`)).toBe(true);
    expect(dialing.session.receive(`!V ${"0".repeat(64)}`)).toBe(false);
    expect(dialing.events).toEqual(["violation the peer did not prove it holds the peer token"]);
    const refused = dialer(new PeerKey(undefined));
    refused.session.open();
    expect(refused.session.receive("E ? - PEER_AUTH_FAILED - wrong proof")).toBe(false);
    expect(refused.events).toEqual(["refused E ? - PEER_AUTH_FAILED - wrong proof"]);
  });
});
