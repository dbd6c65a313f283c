import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockdProcess, selfSignedCertificate } from "@lock/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

// lockd serving TLS only (its admin server HTTPS, with an admin token), with a certificate from a
// throwaway CA that lock trusts through LOCK_TLS_CA_FILE.
const certificate = selfSignedCertificate();
const ADMIN_TOKEN = "tls-test-admin-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "lock-tls-test-"));
const adminTokenFile = join(dir, "admin-token");
let lockd: LockdProcess;

beforeAll(async () => {
  writeFileSync(adminTokenFile, ADMIN_TOKEN);
  const files = ["--tls-cert", certificate.certPath, "--tls-key", certificate.keyPath];
  lockd = await LockdProcess.start({
    admin: true,
    args: [...files, "--admin-tls-cert", certificate.certPath, "--admin-tls-key", certificate.keyPath],
    env: { LOCKD_ADMIN_TOKEN: ADMIN_TOKEN },
  });
});
afterAll(async () => {
  await lockd?.dispose();
  certificate.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it("lock run and lock status connect over TLS with LOCK_TLS_CA_FILE", async () => {
  const env = { LOCK_SERVERS: lockd.address, LOCK_TLS_CA_FILE: certificate.certPath };
  const run = await LockCli.run(
    ["run", "tls:job", "--", "node", "-e", "console.log('token', process.env.LOCK_TOKEN)"],
    env,
  );
  expect(run.code).toBe(0);
  expect(run.stdout[0]).toMatch(/^token \d+$/);
  const status = await LockCli.run(["status", "--json"], env);
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout.join("\n")).nodes[0]).toMatchObject({ state: "up", role: "active" });
});

it("without the CA, lockd's certificate is not trusted: no server is reachable", async () => {
  const env = { LOCK_SERVERS: lockd.address, LOCK_TLS: "1" };
  const run = await LockCli.run(["run", "tls:job", "--", "true"], env);
  expect(run.code).toBe(EXIT_CODES.NO_SERVER.status);
  const status = await LockCli.run(["status"], env);
  expect(status.code).toBe(EXIT_CODES.NO_SERVER.status);
  expect(status.stdout.join("\n")).toMatch(/DOWN/);
});

it("lock status and lock locks read an HTTPS admin server (--admin https://…), the admin token over TLS", async () => {
  const admin = `https://127.0.0.1:${lockd.adminPort}`;
  const env = { LOCK_SERVERS: lockd.address, LOCK_TLS_CA_FILE: certificate.certPath };
  const status = await LockCli.run(
    ["status", "--json", "--admin", admin, "--admin-token-file", adminTokenFile],
    env,
  );
  expect(status.code).toBe(0);
  const node = JSON.parse(status.stdout.join("\n")).nodes[0];
  expect(node).toMatchObject({ state: "up", role: "active", adminAddress: admin, errors: [] });
  expect(typeof node.grantsPerSecond).toBe("number");
  const locks = await LockCli.run(
    ["locks", "--json", "--admin", admin, "--admin-token-file", adminTokenFile],
    env,
  );
  expect(locks.code).toBe(0);
  // Plain HTTP to the HTTPS port gets no JSON; an HTTPS admin server whose CA lock does not trust is no server.
  const plain = await LockCli.run(
    ["locks", "--admin", `127.0.0.1:${lockd.adminPort}`, "--admin-token-file", adminTokenFile],
    env,
  );
  expect(plain.code).not.toBe(0);
  const untrusted = await LockCli.run(["locks", "--admin", admin, "--admin-token-file", adminTokenFile], {
    LOCK_SERVERS: lockd.address,
  });
  expect(untrusted.code).toBe(EXIT_CODES.NO_SERVER.status);
  expect(untrusted.stderr).toMatch(/admin server https:\/\/127\.0\.0\.1:\d+: (SELF_SIGNED|DEPTH_ZERO)/);
});
