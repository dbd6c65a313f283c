import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { LockdProcess, selfSignedCertificate, type TestCertificate } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Connections that never say a word (not even a TLS ClientHello) must not keep a client that does
 * out: they are counted from the TCP accept on, and the oldest makes room for a newcomer. lockd runs
 * with a file descriptor limit below the flood, so uncounted sockets would exhaust it.
 */
const SECRET = "flood-test-secret-0123456789";
const FD_LIMIT = 256;
const SILENT_CONNECTIONS = 400;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function floodedLockd(certificate?: TestCertificate): Promise<LockdProcess> {
  const lockd = await LockdProcess.start({
    env: { LOCKD_AUTH_TOKEN: SECRET },
    args: [
      "--max-connections",
      "100",
      "--max-unauthenticated",
      "50",
      ...(certificate ? ["--tls-cert", certificate.certPath, "--tls-key", certificate.keyPath] : []),
    ],
  });
  cleanups.push(() => lockd.dispose());
  // Lower the running lockd's descriptor limit (util-linux prlimit; the soft and hard limit).
  execFileSync("prlimit", ["--pid", String(lockd.pid), `--nofile=${FD_LIMIT}:${FD_LIMIT}`]);
  const silent: Socket[] = [];
  cleanups.push(() => {
    for (const socket of silent) socket.destroy();
  });
  for (let i = 0; i < SILENT_CONNECTIONS; i++) {
    const socket = connectTcp({ host: "127.0.0.1", port: lockd.port });
    socket.on("error", () => {});
    silent.push(socket);
    await once(socket, "connect");
  }
  return lockd;
}

/** Authenticates and acquires one key on `socket`; resolves with the grant line. */
async function acquire(socket: Socket): Promise<string> {
  socket.setEncoding("utf8");
  let received = "";
  const grant = new Promise<string>((resolve, reject) => {
    socket.on("data", (chunk: string) => {
      received += chunk;
      const line = received.split("\n").find((candidate) => candidate.startsWith("A "));
      if (line !== undefined) resolve(line);
    });
    socket.once("close", () =>
      reject(new Error(`closed before the grant; received ${JSON.stringify(received)}`)),
    );
    socket.once("error", reject);
  });
  socket.write(`H ${SECRET}\nA flood:key 30 0\n`);
  return grant;
}

describe("a flood of silent connections", () => {
  it("over TLS: unfinished handshakes are counted and evicted, and a real client is served", async () => {
    const certificate = selfSignedCertificate();
    cleanups.push(() => certificate.dispose());
    const lockd = await floodedLockd(certificate);
    const client = connectTls({
      host: "127.0.0.1",
      port: lockd.port,
      ca: certificate.cert,
      servername: "localhost",
    });
    cleanups.push(() => client.destroy());
    await once(client, "secureConnect");
    expect(await acquire(client)).toMatch(/^A flood:key \d+$/);
  }, 30_000);

  it("over plain TCP: a real client is served", async () => {
    const lockd = await floodedLockd();
    const client = connectTcp({ host: "127.0.0.1", port: lockd.port });
    cleanups.push(() => client.destroy());
    await once(client, "connect");
    expect(await acquire(client)).toMatch(/^A flood:key \d+$/);
  }, 30_000);
});
