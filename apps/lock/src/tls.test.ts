import { LockdProcess, selfSignedCertificate } from "@lock/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

// lockd serving TLS only, with a certificate from a throwaway CA that lock trusts through LOCK_TLS_CA_FILE.
const certificate = selfSignedCertificate();
let lockd: LockdProcess;

beforeAll(async () => {
  lockd = await LockdProcess.start({
    args: ["--tls-cert", certificate.certPath, "--tls-key", certificate.keyPath],
  });
});
afterAll(async () => {
  await lockd?.dispose();
  certificate.dispose();
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
