import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PeerCertificate, TLSSocket } from "node:tls";
import {
  LineClient,
  LockdCluster,
  LockdProcess,
  selfSignedCertificate,
  type TestCertificate,
} from "@lock/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { describeCertificate } from "./tls-files.js";

/**
 * SIGHUP reads the TLS files again (issue 26): the next TLS client gets the new certificate, on the
 * client port and the admin server, while connections already open (and their locks) go on; a bad
 * file is logged and the certificate in use kept; peer links dial with the new CA.
 */
const first = selfSignedCertificate();
const second = selfSignedCertificate();
const dir = mkdtempSync(join(tmpdir(), "lockd-tls-reload-"));
const files = { cert: join(dir, "cert.pem"), key: join(dir, "key.pem"), ca: join(dir, "ca.pem") };
const ADMIN_TOKEN = "admin-token-of-the-reload-test";
const trustBoth = { ca: [first.cert, second.cert], servername: "localhost" };

afterAll(() => {
  first.dispose();
  second.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Puts `certificate` (and itself as the CA peers must chain to) where lockd reads its TLS files. */
function install(certificate: TestCertificate): void {
  copyFileSync(certificate.certPath, files.cert);
  copyFileSync(certificate.keyPath, files.key);
  copyFileSync(certificate.certPath, files.ca);
}

function fingerprintOf(certificate: TestCertificate): string {
  return describeCertificate(certificate.cert).fingerprint256;
}

function servedFingerprint(client: LineClient): string {
  return ((client.socket as TLSSocket).getPeerCertificate() as PeerCertificate).fingerprint256;
}

/** GET `path` over HTTPS with the admin token: the status and the certificate the server presented. */
function adminGet(
  port: number,
  path: string,
): Promise<{ status: number; fingerprint: string; body: string }> {
  return new Promise((resolve, reject) => {
    const request = get(
      {
        host: "127.0.0.1",
        port,
        path,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        // A connection of its own each time: a kept-alive one would show its own handshake's certificate.
        agent: false,
        ...trustBoth,
      },
      (response) => {
        const fingerprint = (response.socket as TLSSocket).getPeerCertificate().fingerprint256;
        let body = "";
        response.setEncoding("utf8").on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, fingerprint, body }));
      },
    );
    request.on("error", reject);
  });
}

const isReloaded = (entry: Record<string, unknown>) => String(entry.msg).startsWith("TLS files reloaded");
const isReloadFailure = (entry: Record<string, unknown>) =>
  entry.msg === "TLS reload failed: the certificates in use are kept";

describe("SIGHUP reloads the TLS files", () => {
  it("serves the new certificate to the next client; open connections keep their locks; a bad file keeps the old one", async () => {
    install(first);
    await using lockd = await LockdProcess.start({
      admin: true,
      args: [
        "--tls-cert",
        files.cert,
        "--tls-key",
        files.key,
        "--admin-tls-cert",
        files.cert,
        "--admin-tls-key",
        files.key,
      ],
      env: { LOCKD_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    using before = await LineClient.connectTls(lockd.port, trustBoth);
    expect(servedFingerprint(before)).toBe(fingerprintOf(first));
    const token = /^A rotate:k (\d+)$/.exec(await before.request("A rotate:k 30 0"))![1];
    const adminBefore = await adminGet(lockd.adminPort, "/status");
    expect(adminBefore).toMatchObject({ status: 200, fingerprint: fingerprintOf(first) });
    expect(JSON.parse(adminBefore.body).keysHeld).toBe(1);

    install(second);
    let since = lockd.logs.length;
    process.kill(lockd.pid!, "SIGHUP");
    const reloaded = await lockd.waitForLog(isReloaded, { since });
    expect(reloaded).toMatchObject({
      level: 30,
      cert: { fingerprint256: fingerprintOf(second) },
      adminCert: { fingerprint256: fingerprintOf(second) },
    });

    using after = await LineClient.connectTls(lockd.port, trustBoth);
    expect(servedFingerprint(after)).toBe(fingerprintOf(second));
    expect(await adminGet(lockd.adminPort, "/status")).toMatchObject({
      status: 200,
      fingerprint: fingerprintOf(second),
    });
    // The connection made before the reload still holds its lock, and releases it.
    expect(await after.request("A rotate:k 30 0.05")).toMatch(/^T rotate:k/);
    expect(await before.request(`R rotate:k ${token}`)).toBe("R rotate:k 1");

    // A key file caught half-written, then a key that is another certificate's: both refused, by name.
    for (const [keyText, reason] of [
      ["-----BEGIN PRIVATE KEY-----\nnot base64", "not a PEM private key"],
      [first.key.toString(), "not the private key of --tls-cert"],
    ] as const) {
      writeFileSync(files.key, keyText);
      since = lockd.logs.length;
      process.kill(lockd.pid!, "SIGHUP");
      const failed = await lockd.waitForLog(isReloadFailure, { since });
      expect(failed).toMatchObject({ level: 50, signal: "SIGHUP" });
      expect(String(failed.error)).toContain(`--tls-key ${files.key}: ${reason}`);
      expect(JSON.stringify(failed)).not.toContain("PRIVATE KEY");
      using next = await LineClient.connectTls(lockd.port, trustBoth);
      expect(servedFingerprint(next)).toBe(fingerprintOf(second));
      expect(await next.request("P alive")).toBe("P alive");
    }
    expect(await before.request("P still")).toBe("P still");
    expect(lockd.logs.some((entry) => entry.msg === "stopping")).toBe(false);
  });

  it("peer links dial with the reloaded CA: a node restarted with a new certificate rejoins", async () => {
    install(first);
    await using cluster = await LockdCluster.start({
      nodes: 2,
      args: ["--tls-cert", files.cert, "--tls-key", files.key, "--tls-ca", files.ca],
    });
    const [active, standby] = cluster.nodes as [LockdProcess, LockdProcess];
    await active.waitForServing({ since: 0 });
    await standby.waitForFollowing(cluster.advertised(0), { since: 0 });

    // The new certificate, and a CA file that trusts only it: the old one no longer passes.
    install(second);
    const marks = cluster.nodes.map((node) => node.logs.length);
    for (const node of cluster.nodes) process.kill(node.pid!, "SIGHUP");
    await Promise.all(cluster.nodes.map((node, i) => node.waitForLog(isReloaded, { since: marks[i] })));
    // The links made before the reload stay up.
    await using probe = await LineClient.connectTls(active.port, trustBoth);
    expect(await probe.request("P settled")).toBe("P settled");
    for (const [i, node] of cluster.nodes.entries())
      expect(node.logs.slice(marks[i]).filter((entry) => entry.msg === "peer lost")).toEqual([]);

    // Restarted, the standby serves the new certificate and trusts only it: it follows the active
    // again only if the active dials it with the reloaded CA (the active's link carries its
    // heartbeats and the replication stream) and serves it the new certificate.
    expect(await standby.stop()).toEqual({ code: 0, signal: null });
    const restarted = standby.logs.length;
    await cluster.restart(1);
    await standby.waitForFollowing(cluster.advertised(0), { since: restarted });
  });
});
