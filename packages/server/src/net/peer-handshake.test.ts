import { EventEmitter, once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { PEER_PROTOCOL_VERSION } from "../cluster/peer/peer-version.js";
import {
  dialAsPeer,
  FAKE_PEER,
  nonce,
  PEER_TOKEN,
  peerProof,
  SELF,
  serveNode,
  untilClosed,
} from "./peer.test.data.js";
import { client, onCleanup, serve } from "./serve.test.data.js";

const TOKEN = (1n << 24n) + 1n;

describe("the listening side of the peer handshake", () => {
  it("makes a connection that proves the peer token a peer link: it joins, replicates and is acknowledged", async () => {
    const { server } = await serveNode();
    const peer = await dialAsPeer(server);
    peer.send(`!J ${FAKE_PEER} active 5 5\n!S 5 10\n!h held ${TOKEN} 30000 r1\n!s 10 1`);
    expect(await peer.next()).toBe("!K 10");
    peer.send(`!G 11 other ${TOKEN + 1n} 30000`);
    expect(await peer.next()).toBe("!K 11");
    expect([...server.node.holders()].map((holder) => holder.key).sort()).toEqual(["held", "other"]);
    expect(server.node.activeAddress).toBe(FAKE_PEER);
  });

  it("refuses a wrong peer token after the auth failure delay, reports it, and never says why in detail", async () => {
    const { server, events } = await serveNode();
    const peer = await dialAsPeer(server, { token: "a-token-that-is-not-the-cluster-one" });
    peer.send(`!J ${FAKE_PEER} active 5 5`);
    const lines = await untilClosed(peer);
    expect(lines).toEqual([
      expect.stringMatching(/^E \? - PEER_AUTH_FAILED - wrong proof of the peer token$/),
    ]);
    expect(events.rejected).toEqual([
      {
        remote: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
        node: FAKE_PEER,
        reason: expect.any(String),
        count: 1,
      },
    ]);
    expect(server.node.activeAddress).toBeUndefined();
  });

  it("refuses a node that is not another --peers entry, and this node's own address", async () => {
    const { server, events } = await serveNode();
    for (const node of ["127.0.0.1:9", SELF]) {
      const c = await client(server);
      c.send(`!N ${node} ${nonce()}`);
      expect(await untilClosed(c)).toEqual([expect.stringMatching(/^E \? - PEER_AUTH_FAILED - /)]);
    }
    expect(events.rejected.map((event) => event.node)).toEqual(["127.0.0.1:9"]);
  });

  it("with a client auth token, a peer link sends H first; peer frames before it are refused", async () => {
    const clientToken = "client-token-of-26-letters";
    const { server } = await serveNode({ authToken: clientToken });
    const early = await client(server);
    early.send(`!N ${FAKE_PEER} ${nonce()}`);
    expect(await untilClosed(early)).toEqual([
      expect.stringMatching(/^E \? - PEER_NOT_AUTHENTICATED - peer frame before H/),
    ]);
    const peer = await dialAsPeer(server, { clientToken });
    peer.send(`!J ${FAKE_PEER} active 5 5\n!S 5 1\n!s 1 0`);
    expect(await peer.next()).toBe("!K 1");
  });

  it("refuses a handshake on a connection that already ran client verbs", async () => {
    const { server } = await serveNode();
    const c = await client(server);
    expect(await c.request("P x")).toBe("P x");
    c.send(`!N ${FAKE_PEER} ${nonce()}`);
    expect(await untilClosed(c)).toEqual([expect.stringMatching(/^E \? - PEER_NOT_AUTHENTICATED - /)]);
  });

  it("serves no lock verb on a peer link: the link is dropped and the drop reported", async () => {
    const { server, events } = await serveNode();
    const peer = await dialAsPeer(server);
    peer.send(`!J ${FAKE_PEER} active 5 5\nA k 30 0`);
    expect(await untilClosed(peer)).toEqual([expect.stringMatching(/^E \? - PEER_PROTOCOL_ERROR - /)]);
    expect(events.dropped).toEqual([{ peer: FAKE_PEER, reason: "a A request on a peer link", count: 1 }]);
    expect(server.node.keyCount).toBe(0);
  });

  it("answers peer frames on a single node with BAD_SYNTAX, as any unknown verb, and stays open", async () => {
    const c = await client(await serve());
    expect(await c.request(`!N ${FAKE_PEER} ${nonce()}`)).toMatch(/^E \? - BAD_SYNTAX - /);
    expect(await c.request("P still")).toBe("P still");
  });
});

/** A listener in this process that plays a peer's side of the handshake, however `answer` says. */
async function fakeListener(
  answer: (line: string, socket: Socket) => void,
): Promise<{ address: string; lines: string[]; socketEvents: EventEmitter }> {
  const lines: string[] = [];
  const socketEvents = new EventEmitter();
  const server: Server = createServer((socket) => {
    socket.setEncoding("utf8");
    let buffer = "";
    socket.on("error", () => {});
    socket.on("data", (chunk: string) => {
      buffer += chunk;
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        lines.push(line);
        answer(line, socket);
        socketEvents.emit("line");
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, lines, socketEvents };
}

describe("the dialling side of the peer handshake", () => {
  it("sends nothing past its proof to a peer that cannot prove the peer token, and reports it", async () => {
    const listenerNonce = nonce();
    const fake = await fakeListener((line, socket) => {
      if (line.startsWith("!N ")) socket.write(`!C ${listenerNonce}\n`);
      if (line.startsWith("!V ")) socket.write(`!V ${"0".repeat(64)}\n`);
    });
    const { events } = await serveNode({ peers: [fake.address, SELF] });
    await events.first("dropped");
    expect(events.dropped[0]).toEqual({
      peer: fake.address,
      reason: "the peer did not prove it holds the peer token",
      count: 1,
    });
    expect(fake.lines.slice(0, 2)).toEqual([
      expect.stringMatching(new RegExp(`^!N ${SELF} [0-9a-f]{64} ${PEER_PROTOCOL_VERSION}$`)),
      expect.stringMatching(/^!V [0-9a-f]{64}$/),
    ]);
    expect(fake.lines.some((line) => !/^!(N|V) /.test(line))).toBe(false);
  });

  it("proves itself to a peer that proves itself, then joins and sends heartbeats", async () => {
    const listenerNonce = nonce();
    let dialerNonce = "";
    const fake = await fakeListener((line, socket) => {
      if (line.startsWith("!N ")) {
        dialerNonce = line.split(" ")[2]!;
        socket.write(`!C ${listenerNonce}\n`);
      }
      if (line.startsWith("!V ")) {
        expect(line).toBe(
          `!V ${peerProof(PEER_TOKEN, "dialer", SELF, fake.address, dialerNonce, listenerNonce)}`,
        );
        socket.write(
          `!V ${peerProof(PEER_TOKEN, "listener", SELF, fake.address, dialerNonce, listenerNonce)}\n`,
        );
      }
      if (line.startsWith("!B ")) socket.end();
    });
    const { events } = await serveNode({ peers: [fake.address, SELF] });
    while (!fake.lines.some((line) => line.startsWith("!B "))) await once(fake.socketEvents, "line");
    expect(fake.lines.slice(2, 4)).toEqual([
      expect.stringMatching(new RegExp(`^!J ${SELF} standby \\d+ \\d+$`)),
      expect.stringMatching(new RegExp(`^!B ${SELF} standby \\d+ - \\d+$`)),
    ]);
    expect(events.dropped).toEqual([]);
  });

  it("says hello without a version to a listener that refuses a versioned one as malformed (lockd 0.1.0), with no report", async () => {
    const fake = await fakeListener((line, socket) => {
      // lockd 0.1.0's codec: `!N` takes exactly two fields, anything else is a malformed peer frame.
      if (line.split(" ").length !== 3) {
        socket.end("E ? - PEER_NOT_AUTHENTICATED - malformed peer frame (BAD_SYNTAX)\n");
        return;
      }
      if (line.startsWith("!N ")) socket.end();
    });
    const { events } = await serveNode({ peers: [fake.address, SELF] });
    while (fake.lines.length < 2) await once(fake.socketEvents, "line");
    expect(fake.lines.slice(0, 2)).toEqual([
      expect.stringMatching(new RegExp(`^!N ${SELF} [0-9a-f]{64} ${PEER_PROTOCOL_VERSION}$`)),
      expect.stringMatching(new RegExp(`^!N ${SELF} [0-9a-f]{64}$`)),
    ]);
    expect(events.refused).toEqual([]);
  });

  it("drops a link whose listener announces a protocol older than its window", async () => {
    const fake = await fakeListener((line, socket) => {
      if (line.startsWith("!N ")) socket.write(`!C ${nonce()} 0\n`);
    });
    const { events } = await serveNode({ peers: [fake.address, SELF] });
    await events.first("dropped");
    expect(events.dropped[0]).toMatchObject({
      peer: fake.address,
      reason: expect.stringMatching(/^the peer speaks peer protocol 0, older than this node's window/),
    });
  });
});
