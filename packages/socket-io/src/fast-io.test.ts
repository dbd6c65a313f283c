import { once } from "node:events";
import { type AddressInfo, connect, createServer, Socket } from "node:net";
import { afterEach, expect, it, vi } from "vitest";

afterEach(() => {
  vi.restoreAllMocks();
});

const bindingOf = () => vi.spyOn(process as unknown as { binding(name: string): unknown }, "binding");

// process.binding is deprecated (DEP0111): under --pending-deprecation --throw-deprecation the call
// kills the process a tick later, whatever catches it. Only a process that turned the fast paths on
// may pay that, not everything that imports the package or makes a writer.
it("is off by default: no internals touched, writers use the stream, accepted sockets stay as they are", async () => {
  const binding = bindingOf();
  vi.resetModules();
  const { fastIoEnabled, readIntoSharedBuffer, SocketWriter } = await import("./index.js");
  expect(fastIoEnabled()).toBe(false);
  expect(new SocketWriter(new Socket(), () => {}).direct).toBe(false);

  const server = createServer({ pauseOnConnect: true });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
  try {
    const [accepted] = (await once(server, "connection")) as [Socket];
    expect(readIntoSharedBuffer(accepted, () => expect.unreachable())).toBeUndefined();
    expect(accepted.destroyed).toBe(false);
    // Still an ordinary socket: it reads with 'data' events once resumed.
    accepted.resume();
    client.write("ping\n");
    const [chunk] = (await once(accepted, "data")) as [Buffer];
    expect(chunk.toString()).toBe("ping\n");
    accepted.destroy();
  } finally {
    client.destroy();
    server.close();
  }
  expect(binding).not.toHaveBeenCalled();
});

it("useFastIo(true) probes for the write internals at once, and only once; writers made after it write directly", async () => {
  const binding = bindingOf();
  vi.resetModules();
  const { useFastIo, fastIoEnabled, SocketWriter } = await import("./index.js");
  expect(new SocketWriter(new Socket(), () => {}, { direct: false }).direct).toBe(false);
  expect(binding).not.toHaveBeenCalled();
  expect(useFastIo(true)).toBe(true);
  expect(fastIoEnabled()).toBe(true);
  expect(binding).toHaveBeenCalledTimes(1);
  expect(binding).toHaveBeenCalledWith("stream_wrap");
  const first = new SocketWriter(new Socket(), () => {});
  const second = new SocketWriter(new Socket(), () => {});
  expect([first.direct, second.direct]).toEqual([true, true]);
  expect(binding).toHaveBeenCalledTimes(1);
  // Off again: new writers use the stream.
  expect(useFastIo(false)).toBe(false);
  expect(new SocketWriter(new Socket(), () => {}).direct).toBe(false);
});

it("on a Node without the write internals, useFastIo(true) says so and writers fall back to the stream", async () => {
  bindingOf().mockImplementation(() => {
    throw new Error("No such module: stream_wrap");
  });
  vi.resetModules();
  const { useFastIo, fastIoEnabled, SocketWriter } = await import("./index.js");
  expect(useFastIo(true)).toBe(false);
  expect(fastIoEnabled()).toBe(true);
  expect(new SocketWriter(new Socket(), () => {}).direct).toBe(false);
});
