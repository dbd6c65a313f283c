import { mkdtempSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FaultProxy, LineClient } from "@lock/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LockServer as LockServerType } from "./server.js";

/**
 * Which I/O path every socket of a cluster node takes, in each mode of @lock/socket-io: the default
 * (public APIs only), `useFastIo(true)`, and `useFastIo(true)` on a Node without the write internals.
 * Two in-process nodes and a client exercise every kind of socket lockd has: accepted client
 * connections, accepted peer connections (the listening side of a peer link) and dialled peer links.
 * The stream paths are seen on `net.Socket.prototype` (`write`, and `emit("data")`); the fast paths
 * use neither.
 */

interface SocketRecord {
  streamWrites: number;
  dataEvents: number;
}

const records = new Map<Socket, SocketRecord>();
const restores: Array<() => void> = [];
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const restore of restores.splice(0).reverse()) restore();
  records.clear();
  vi.restoreAllMocks();
});

/** Wraps `Socket.prototype[name]` (own or inherited) to run `before` first; undone after the test. */
function observe(name: "write" | "emit" | "setNoDelay", before: (socket: Socket, args: unknown[]) => void) {
  const proto = Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const own = Object.getOwnPropertyDescriptor(proto, name);
  const original = proto[name]!;
  proto[name] = function (this: Socket, ...args: unknown[]) {
    before(this, args);
    return original.apply(this, args);
  };
  restores.push(() => {
    if (own) Object.defineProperty(proto, name, own);
    else delete proto[name];
  });
}

function recordSockets(): void {
  // Every socket lockd serves or dials gets setNoDelay(true): that is how they are found.
  observe("setNoDelay", (socket) => {
    if (!records.has(socket)) records.set(socket, { streamWrites: 0, dataEvents: 0 });
  });
  observe("write", (socket) => {
    const record = records.get(socket);
    if (record) record.streamWrites += 1;
  });
  observe("emit", (socket, [event]) => {
    const record = records.get(socket);
    if (record && event === "data") record.dataEvents += 1;
  });
}

/** Resolves once `check` holds, looked at every few milliseconds (replication acks raise no event). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

type Mode = "default" | "fast" | "fast, no write internals";

/**
 * Fresh copies of the server and @lock/socket-io (the mode and the probe are per module instance),
 * a two-node cluster behind proxies (the peers list needs addresses before the nodes bind), a
 * client that takes and releases locks on the active, and the state once the standby acknowledged.
 */
async function runCluster(mode: Mode) {
  vi.resetModules();
  const socketIo = await import("@lock/socket-io");
  const { LockServer } = await import("./server.js");
  if (mode !== "default") socketIo.useFastIo(true);

  const proxies = [await FaultProxy.start(1), await FaultProxy.start(1)];
  cleanups.push(async () => {
    for (const proxy of proxies) await proxy.close();
  });
  const peers = proxies.map((proxy) => proxy.address);
  const servers: LockServerType[] = [];
  // The first peer (highest priority) serves; the second follows it.
  let serving!: () => void;
  let following!: () => void;
  const ready = Promise.all([
    new Promise<void>((resolve) => {
      serving = resolve;
    }),
    new Promise<void>((resolve) => {
      following = resolve;
    }),
  ]);
  for (const [index, proxy] of proxies.entries()) {
    const dataDir = mkdtempSync(join(tmpdir(), "lockd-io-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const server = await LockServer.start({
      port: 0,
      dataDir,
      advertise: proxy.address,
      cluster: {
        peers,
        peerToken: "io-paths-test-peer-token",
        timing: { heartbeatMs: 50, peerTimeoutMs: 1_000 },
        events:
          index === 0
            ? { serving: () => serving() }
            : { following: (address) => address === peers[0] && following() },
      },
    });
    cleanups.push(() => server.close(100));
    proxy.retarget(server.port);
    servers.push(server);
  }
  const [active, standby] = servers as [LockServerType, LockServerType];
  await ready;

  const client = await LineClient.connect(active.port);
  cleanups.push(() => client.close());
  for (let i = 0; i < 20; i++) {
    const granted = await client.request(`A io-paths:${i} 30 0`);
    expect(granted).toMatch(new RegExp(`^A io-paths:${i} \\d+$`));
    expect(await client.request(`R io-paths:${i} ${granted.split(" ")[2]}`)).toBe(`R io-paths:${i} 1`);
  }
  // Both links finished their handshake (so each end of each wrote and read), and the standby
  // acknowledged the whole stream.
  await until(() => {
    const [, toStandby] = active.cluster!.peerStatus();
    const [toActive] = standby.cluster!.peerStatus();
    const lag = toStandby!.replicationLag;
    return toStandby!.linkConnected === true && toActive!.linkConnected === true && lag?.ops === 0;
  });

  const serverPorts = new Set(servers.map((server) => server.port));
  const proxyPorts = new Set(proxies.map((proxy) => proxy.port));
  const accepted = [...records].filter(([socket]) => serverPorts.has(socket.localPort!)).map(([, r]) => r);
  const dialled = [...records].filter(([socket]) => proxyPorts.has(socket.remotePort!)).map(([, r]) => r);
  return { accepted, dialled };
}

describe("lockd's socket I/O paths", () => {
  it("by default every read and write, on client connections and both ends of peer links, uses the public stream API", async () => {
    const binding = vi.spyOn(process as unknown as { binding(name: string): unknown }, "binding");
    recordSockets();
    const { accepted, dialled } = await runCluster("default");
    // The client's connection and one incoming peer link on each node; one outgoing link each.
    expect(accepted).toHaveLength(3);
    expect(dialled).toHaveLength(2);
    for (const record of [...accepted, ...dialled]) {
      expect(record.streamWrites).toBeGreaterThan(0);
      expect(record.dataEvents).toBeGreaterThan(0);
    }
    expect(binding).not.toHaveBeenCalled();
  });

  it("with useFastIo(true), accepted connections read from the shared buffer and every socket writes directly", async () => {
    recordSockets();
    const { accepted, dialled } = await runCluster("fast");
    expect(accepted).toHaveLength(3);
    expect(dialled).toHaveLength(2);
    for (const record of [...accepted, ...dialled]) expect(record.streamWrites).toBe(0);
    for (const record of accepted) expect(record.dataEvents).toBe(0);
    // A dialled socket cannot be moved onto the shared buffer (Node offers onread only at connect).
    for (const record of dialled) expect(record.dataEvents).toBeGreaterThan(0);
  });

  it("with useFastIo(true) on a Node without the write internals, every socket writes through the stream", async () => {
    vi.spyOn(process as unknown as { binding(name: string): unknown }, "binding").mockImplementation(() => {
      throw new Error("No such module: stream_wrap");
    });
    recordSockets();
    const { accepted, dialled } = await runCluster("fast, no write internals");
    expect(accepted).toHaveLength(3);
    expect(dialled).toHaveLength(2);
    for (const record of [...accepted, ...dialled]) expect(record.streamWrites).toBeGreaterThan(0);
    // Reads need only the accepted socket's handle, which is there.
    for (const record of accepted) expect(record.dataEvents).toBe(0);
    for (const record of dialled) expect(record.dataEvents).toBeGreaterThan(0);
  });
});
