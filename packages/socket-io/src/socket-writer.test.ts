import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { connect as connectTls, createServer as createTlsServer } from "node:tls";
import { selfSignedCertificate } from "@lock/testkit";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SocketWriter, useFastIo } from "./index.js";

// The direct path under test (and the stream path with `direct: false`); fast-io.test.ts covers the default.
beforeAll(() => {
  useFastIo(true);
});

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A connected pair over loopback: `client` (ours to write on) and the server's `peer`. */
async function socketPair(): Promise<{ client: Socket; peer: Socket }> {
  const server: Server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const accepted = once(server, "connection");
  const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
  await once(client, "connect");
  const [peer] = (await accepted) as [Socket];
  cleanups.push(() => {
    client.destroy();
    peer.destroy();
    server.close();
  });
  return { client, peer };
}

/** Everything `socket` receives until `total` characters have arrived. */
function receive(socket: Socket, total: number): Promise<string> {
  socket.setEncoding("latin1");
  let text = "";
  return new Promise((resolve) => {
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (text.length >= total) resolve(text);
    });
  });
}

function forbidStreamWrites(socket: Socket): void {
  socket.write = () => {
    throw new Error("socket.write was called");
  };
}

describe("SocketWriter", () => {
  it("writes straight into the handle, in order, without the stream", async () => {
    const { client, peer } = await socketPair();
    const writer = new SocketWriter(client, () => {});
    expect(writer.direct).toBe(true);
    forbidStreamWrites(client);
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
    const expected = lines.join("");
    const received = receive(peer, expected.length);
    for (const line of lines) expect(writer.write(line)).toBe(true);
    expect(writer.queuedBytes).toBe(0);
    expect(await received).toBe(expected);
  });

  it.each([
    { direct: true, name: "direct" },
    { direct: false, name: "through the stream" },
  ])("queues what the kernel does not take and says when it drained ($name)", async ({ direct }) => {
    const { client, peer } = await socketPair();
    peer.pause();
    let drains = 0;
    let onDrained!: () => void;
    const drained = new Promise<void>((resolve) => {
      onDrained = resolve;
    });
    const writer = new SocketWriter(
      client,
      () => {
        drains += 1;
        onDrained();
      },
      { direct },
    );
    expect(writer.direct).toBe(direct);
    if (direct) forbidStreamWrites(client);
    // Numbered 64 KiB chunks until the kernel buffers are full, then a few more behind them.
    let sent = "";
    for (let i = 0, refused = 0; refused < 3; i++) {
      const chunk = `${String(i).padStart(8, "0")}${"x".repeat(64 * 1024 - 9)}\n`;
      sent += chunk;
      if (!writer.write(chunk)) refused += 1;
    }
    expect(writer.queuedBytes).toBeGreaterThan(0);
    const received = receive(peer, sent.length);
    expect(drains).toBe(0);
    peer.resume();
    await drained;
    expect(await received).toBe(sent);
    expect(writer.queuedBytes).toBe(0);
    expect(drains).toBe(1);
  });

  it("destroys the socket with the errno error when a write fails", async () => {
    const { client, peer } = await socketPair();
    client.pause();
    const writer = new SocketWriter(client, () => {});
    const failed = once(client, "error");
    // The reset reaches the client's kernel socket before the peer reports itself closed.
    peer.resetAndDestroy();
    await once(peer, "close");
    expect(writer.write("after the reset\n")).toBe(false);
    const [error] = (await failed) as [NodeJS.ErrnoException];
    expect(["EPIPE", "ECONNRESET"]).toContain(error.code);
    expect(error.syscall).toBe("write");
    expect(error.message).toBe(`write ${error.code}`);
    expect(client.destroyed).toBe(true);
  });

  it("sends what the stream holds (written while connecting) first", async () => {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    cleanups.push(() => server.close());
    const accepted = once(server, "connection");
    const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
    cleanups.push(() => client.destroy());
    const writer = new SocketWriter(client, () => {});
    // Runs before the stream hands its pending "first" to the handle: "second" must queue behind it.
    client.once("connect", () => writer.write("second\n"));
    expect(writer.write("first\n")).toBe(true);
    const [peer] = (await accepted) as [Socket];
    cleanups.push(() => peer.destroy());
    expect(await receive(peer, "first\nsecond\n".length)).toBe("first\nsecond\n");
  });

  it("drops writes after end() instead of failing the socket", async () => {
    const { client, peer } = await socketPair();
    const writer = new SocketWriter(client, () => {});
    let errors = 0;
    client.on("error", () => errors++);
    writer.write("before\n");
    client.end();
    expect(writer.write("after\n")).toBe(true);
    peer.setEncoding("latin1");
    let text = "";
    peer.on("data", (chunk: string) => {
      text += chunk;
    });
    await once(peer, "end");
    expect(text).toBe("before\n");
    expect(errors).toBe(0);
  });

  it("uses the stream on a TLS socket", async () => {
    const certificate = selfSignedCertificate();
    cleanups.push(() => certificate.dispose());
    const server = createTlsServer({ cert: certificate.cert, key: certificate.key });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    cleanups.push(() => server.close());
    const accepted = once(server, "secureConnection");
    const client = connectTls({
      port: (server.address() as AddressInfo).port,
      host: "127.0.0.1",
      ca: certificate.cert,
    });
    cleanups.push(() => client.destroy());
    await once(client, "secureConnect");
    const [peer] = (await accepted) as [Socket];
    cleanups.push(() => peer.destroy());
    const writer = new SocketWriter(client, () => {});
    expect(writer.direct).toBe(false);
    const received = receive(peer, "over tls\n".length);
    expect(writer.write("over tls\n")).toBe(true);
    expect(await received).toBe("over tls\n");
  });
});
