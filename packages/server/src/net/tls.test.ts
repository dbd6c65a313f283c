import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import { selfSignedCertificate } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockServer } from "./server.js";

describe("LockServer over TLS", () => {
  const certificate = selfSignedCertificate();
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-tls-"));
  let server: LockServer;

  beforeAll(async () => {
    server = await LockServer.start({
      port: 0,
      dataDir,
      tls: { cert: certificate.cert, key: certificate.key },
    });
  });
  afterAll(async () => {
    await server?.close(100);
    certificate.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("serves the protocol to a client that trusts the certificate", async () => {
    const socket = connectTls({
      host: "127.0.0.1",
      port: server.port,
      ca: certificate.cert,
      servername: "localhost",
    });
    socket.setEncoding("utf8");
    const reply = await new Promise<string>((resolve, reject) => {
      socket.once("secureConnect", () => socket.write("A tls:key 30 0 r1\n"));
      socket.once("data", resolve);
      socket.once("error", reject);
    });
    expect(reply).toMatch(/^A tls:key \d+ r1\n$/);
    socket.destroy();
  });

  it("closes a connection whose TLS handshake does not finish within the auth timeout", async () => {
    const quick = await LockServer.start({
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), "lockd-tls-")),
      tls: { cert: certificate.cert, key: certificate.key },
      limits: { authTimeoutMs: 200 },
    });
    try {
      const silent = connectTcp({ host: "127.0.0.1", port: quick.port });
      silent.on("error", () => {});
      // Never sends a ClientHello: the server must close it (Node's own default would be 120 s).
      await once(silent, "close");
    } finally {
      await quick.close(100);
    }
  });

  it("does not speak plain text on a TLS port", async () => {
    const socket = connectTcp({ host: "127.0.0.1", port: server.port });
    const closed = new Promise<string>((resolve) => {
      let received = "";
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => {
        received += chunk;
      });
      socket.on("error", () => {});
      socket.once("close", () => resolve(received));
    });
    socket.write("A plain 30 0\n");
    expect(await closed).not.toMatch(/^A plain/);
    expect(server.connectionCount).toBe(0);
  });

  it("reloadTls: a key of another certificate throws and changes nothing; a good pair is served next", async () => {
    const other = selfSignedCertificate();
    try {
      const servedFingerprint = async () => {
        const socket = connectTls({
          host: "127.0.0.1",
          port: server.port,
          ca: [certificate.cert, other.cert],
          servername: "localhost",
        });
        await once(socket, "secureConnect");
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        socket.destroy();
        return fingerprint;
      };
      const original = await servedFingerprint();
      expect(() => server.reloadTls({ cert: other.cert, key: certificate.key })).toThrow();
      expect(await servedFingerprint()).toBe(original);
      server.reloadTls({ cert: other.cert, key: other.key });
      expect(await servedFingerprint()).not.toBe(original);
    } finally {
      other.dispose();
    }
  });

  it("reloadTls on a server started without TLS throws", async () => {
    const plainDir = mkdtempSync(join(tmpdir(), "lockd-tls-"));
    const plain = await LockServer.start({ port: 0, dataDir: plainDir });
    try {
      expect(() => plain.reloadTls({ cert: certificate.cert, key: certificate.key })).toThrow(/without TLS/);
    } finally {
      await plain.close(100);
      rmSync(plainDir, { recursive: true, force: true });
    }
  });
});
