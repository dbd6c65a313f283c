import { once } from "node:events";
import { type AddressInfo, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FaultProxy } from "./fault-proxy.js";
import { LineClient } from "./line-client.js";

/** Scoped cuts: a peer link is a connection whose first byte is `!`; anything else is a client. */
describe("FaultProxy scoped cuts", () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function echoBehindProxy(): Promise<FaultProxy> {
    const server: Server = createServer((socket) => socket.pipe(socket));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    cleanup.push(() => new Promise((resolve) => server.close(resolve)));
    const proxy = await FaultProxy.start((server.address() as AddressInfo).port);
    cleanup.push(() => proxy.close());
    return proxy;
  }

  async function connect(proxy: FaultProxy): Promise<LineClient> {
    const line = await LineClient.connect(proxy.port);
    cleanup.push(() => line.close());
    return line;
  }

  it("cut('peers') drops peer links, open and new, and lets clients through", async () => {
    const proxy = await echoBehindProxy();
    const peer = await connect(proxy);
    expect(await peer.request("!N 127.0.0.1:1 n1")).toBe("!N 127.0.0.1:1 n1");
    proxy.cut("peers");
    await peer.closed;
    const newPeer = await connect(proxy);
    newPeer.send("!N 127.0.0.1:1 n2");
    await newPeer.closed;
    const client = await connect(proxy);
    expect(await client.request("P")).toBe("P");
    proxy.heal();
    const healed = await connect(proxy);
    expect(await healed.request("!N 127.0.0.1:1 n3")).toBe("!N 127.0.0.1:1 n3");
  });

  it("cut('clients') resets a client at its first request; cutPeer drops the links one node dialled", async () => {
    const proxy = await echoBehindProxy();
    proxy.cut("clients");
    const client = await connect(proxy);
    client.send("A k 30 0 id");
    await client.closed;
    expect(proxy.bytes.toServer).toBe(0);
    proxy.heal();
    proxy.cutPeer("127.0.0.1:9");
    const fromNine = await connect(proxy);
    fromNine.send("!N 127.0.0.1:9 n1");
    await fromNine.closed;
    const fromOther = await connect(proxy);
    expect(await fromOther.request("!N 127.0.0.1:8 n1")).toBe("!N 127.0.0.1:8 n1");
  });
});
