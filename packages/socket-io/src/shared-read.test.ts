import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { useFastIo } from "./fast-io.js";
import { readIntoSharedBuffer } from "./shared-read.js";
import { SocketWriter } from "./socket-writer.js";

// The fast paths under test; fast-io.test.ts covers the default (off).
beforeAll(() => {
  useFastIo(true);
});

describe("readIntoSharedBuffer", () => {
  it("moves an accepted connection onto the shared buffer: reads arrive through the callback", async () => {
    const server = createServer({ pauseOnConnect: true });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
    try {
      const [accepted] = (await once(server, "connection")) as [Socket];
      let received = "";
      let gotAll!: () => void;
      const all = new Promise<void>((resolve) => {
        gotAll = resolve;
      });
      // On the Node this is tested on, the internals are there: no silent fallback to streams.
      const socket = readIntoSharedBuffer(accepted, (chunk) => {
        received += chunk.toString("latin1");
        if (received.endsWith("ping 2\n")) gotAll();
      });
      expect(socket).toBeDefined();
      expect(accepted.destroyed).toBe(true);
      client.write("ping 1\n");
      client.write("ping 2\n");
      await all;
      expect(received).toBe("ping 1\nping 2\n");
      // And it writes like any socket, straight into the handle.
      const writer = new SocketWriter(socket!, () => {});
      expect(writer.direct).toBe(true);
      client.setEncoding("latin1");
      const reply = once(client, "data");
      writer.write("pong\n");
      expect(await reply).toEqual(["pong\n"]);
      socket!.destroy();
    } finally {
      client.destroy();
      server.close();
    }
  });

  it("leaves a socket without a handle as it was, so the caller reads it with 'data' events", () => {
    // What a Node whose internals differ would look like: no `_handle` to move.
    const socket = { _handle: null, destroy: () => expect.unreachable() } as unknown as Socket;
    expect(readIntoSharedBuffer(socket, () => {})).toBeUndefined();
  });
});
