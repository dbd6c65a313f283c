import { createHmac, randomBytes } from "node:crypto";
import { EventEmitter, once } from "node:events";
import type { LineClient } from "@lock/testkit";
import { expect } from "vitest";
import type { ClusterEvents } from "../cluster/cluster-api.js";
import { client, serve } from "./serve.test.data.js";
import type { LockServer, LockServerOptions } from "./server.js";

/**
 * In-process cluster nodes and a hand-made peer for the peer-link tests. The peer's side of the
 * handshake is written from docs/protocol.md ("Peer handshake"), not from the server's code, so the
 * tests also hold the documentation to what the server does.
 */
export const PEER_TOKEN = "peer-token-of-the-test-cluster";
/** The node under test advertises this (nothing listens there; peers connect to its real port). */
export const SELF = "127.0.0.1:17420";
/** The hand-made peer: first in --peers (the highest priority). Nothing listens here either. */
export const FAKE_PEER = "127.0.0.1:1";

/** docs/protocol.md: HMAC-SHA256(peer token, "lockd-peer-v1 <side> <dialer> <listener> <dialer nonce> <listener nonce>"). */
export function peerProof(
  token: string,
  side: "dialer" | "listener",
  dialer: string,
  listener: string,
  dialerNonce: string,
  listenerNonce: string,
): string {
  return createHmac("sha256", token)
    .update(`lockd-peer-v1 ${side} ${dialer} ${listener} ${dialerNonce} ${listenerNonce}`)
    .digest("hex");
}

export const nonce = () => randomBytes(32).toString("hex");

export interface RecordedEvents {
  rejected: Array<{ remote: string; node: string | undefined; reason: string; count: number }>;
  dropped: Array<{ peer: string; reason: string; count: number }>;
  refused: Array<{ peer: string; reply: string }>;
  roles: string[];
  /** Resolves once `kind` holds at least one event. */
  first(kind: "rejected" | "dropped" | "refused"): Promise<void>;
}

/**
 * A cluster node in this process: `peers` (default: the fake peer, then this node), a long peer
 * timeout so that it stays a standby for the whole test, and its events recorded.
 */
export async function serveNode(
  options: {
    peers?: string[];
    peerToken?: string | undefined;
    authToken?: string;
    limits?: LockServerOptions["limits"];
  } = {},
): Promise<{ server: LockServer; events: RecordedEvents }> {
  const emitter = new EventEmitter();
  const events: RecordedEvents = {
    rejected: [],
    dropped: [],
    refused: [],
    roles: [],
    first: async (kind) => {
      if (events[kind].length === 0) await once(emitter, kind);
    },
  };
  const handlers: Partial<ClusterEvents> = {
    peerRejected: (remote, node, reason, count) => {
      events.rejected.push({ remote, node, reason, count });
      emitter.emit("rejected");
    },
    peerLinkDropped: (peer, reason, count) => {
      events.dropped.push({ peer, reason, count });
      emitter.emit("dropped");
    },
    peerRefused: (peer, reply) => {
      events.refused.push({ peer, reply });
      emitter.emit("refused");
    },
    roleChanged: (role) => events.roles.push(role),
  };
  const server = await serve({
    advertise: SELF,
    ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    cluster: {
      peers: options.peers ?? [FAKE_PEER, SELF],
      ...("peerToken" in options ? { peerToken: options.peerToken } : { peerToken: PEER_TOKEN }),
      timing: { heartbeatMs: 50, peerTimeoutMs: 60_000 },
      events: handlers,
    },
  });
  return { server, events };
}

/**
 * Connects to `server` and runs the dialling side of the handshake as `node` with `token`: returns
 * the connection once the node's proof checked out (the caller sends `!J` next). With a wrong token
 * it returns after sending the proof, leaving the answer to the caller.
 */
export async function dialAsPeer(
  server: LockServer,
  {
    node = FAKE_PEER,
    token = PEER_TOKEN,
    clientToken,
  }: { node?: string; token?: string; clientToken?: string } = {},
): Promise<LineClient> {
  const c = await client(server);
  if (clientToken !== undefined) expect(await c.request(`H ${clientToken}`)).toBe("H");
  const dialerNonce = nonce();
  const challenge = await c.request(`!N ${node} ${dialerNonce}`);
  expect(challenge).toMatch(/^!C [0-9a-f]{64}$/);
  const listenerNonce = challenge.slice(3);
  c.send(`!V ${peerProof(token, "dialer", node, SELF, dialerNonce, listenerNonce)}`);
  if (token !== PEER_TOKEN) return c;
  expect(await c.next()).toBe(`!V ${peerProof(token, "listener", node, SELF, dialerNonce, listenerNonce)}`);
  return c;
}

/** Every line until the server closes the connection. */
export async function untilClosed(c: LineClient): Promise<string[]> {
  const lines: string[] = [];
  for (;;) {
    try {
      lines.push(await c.next());
    } catch {
      return lines;
    }
  }
}
