import { execFile, execFileSync } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import type { CoordinationStore } from "@lock/server";
import { EtcdCluster, freePort, REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentServer } from "./contract.test.support.js";
import { CoordinatorUnavailableError } from "./errors.js";
import { EtcdCoordinationStore } from "./etcd/store.js";
import { PostgresCoordinationStore } from "./postgres/store.js";

const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TIMEOUT_MS = 300;

const backends: Array<[string, (port: number) => CoordinationStore]> = [
  [
    "etcd",
    (port) => new EtcdCoordinationStore({ endpoints: [`127.0.0.1:${port}`], callTimeoutMs: TIMEOUT_MS }),
  ],
  [
    "postgres",
    (port) =>
      new PostgresCoordinationStore({
        connectionString: `postgres://postgres@127.0.0.1:${port}/test`,
        callTimeoutMs: TIMEOUT_MS,
      }),
  ],
];

describe.each(backends)("%s store that cannot be reached", (_name, open) => {
  let silent: Awaited<ReturnType<typeof silentServer>>;
  beforeAll(async () => {
    silent = await silentServer();
  });
  afterAll(() => silent.close());

  it.each([
    ["a closed port", () => freePort()],
    ["a server that never answers", () => Promise.resolve(silent.port)],
  ])("rejects every call with CoordinatorUnavailableError at %s", async (_where, port) => {
    const store = open(await port());
    try {
      const lease = { cluster: "c", holder: "A", ttlMs: 1000, handle: "1" };
      const calls: Array<Promise<unknown>> = [
        store.takeEpoch(0n),
        store.readEpoch(),
        store.acquireLease("c", "A", 1000),
        store.renewLease(lease),
        store.releaseLease(lease),
        store.readLease("c"),
        store.readDocument("d"),
        store.writeDocument("d", "v", 0n),
      ];
      for (const outcome of await Promise.allSettled(calls)) {
        expect(outcome.status).toBe("rejected");
        const reason = (outcome as PromiseRejectedResult).reason;
        expect(reason).toBeInstanceOf(CoordinatorUnavailableError);
        expect(reason.code).toBe("COORDINATOR_UNAVAILABLE");
      }
    } finally {
      await store.close();
    }
  });
});

describe("close()", () => {
  let etcd: EtcdCluster;
  beforeAll(async () => {
    // The child below runs the built package, as lockd would.
    execFileSync(join(REPO_ROOT, "node_modules", ".bin", "tsc"), [
      "-b",
      join(REPO_ROOT, "packages", "coordinator"),
    ]);
    etcd = await EtcdCluster.start();
  });
  afterAll(async () => {
    await etcd?.dispose();
  });

  it.each(["etcd", "postgres"])(
    "leaves nothing open: a process that used the %s store exits by itself",
    async (kind) => {
      const url =
        kind === "etcd"
          ? `etcd://${etcd.endpoints[0]}/close-test/`
          : `${PG_URL}?schema=lock_coordination_close_test`;
      const script = `
      import { openCoordinationStore } from ${JSON.stringify(join(REPO_ROOT, "packages/coordinator/dist/index.js"))};
      const store = openCoordinationStore(process.argv[1]);
      await store.takeEpoch(0n);
      const lease = await store.acquireLease("c", "holder-" + process.pid, 5000);
      if (lease.held) await store.releaseLease(lease.lease);
      let seen = 0;
      await new Promise((resolve) => store.watchDocument("d", () => ++seen === 1 && resolve()));
      await store.close();
      console.log("closed");
    `;
      const child = execFile(process.execPath, ["--input-type=module", "-e", script, url]);
      let output = "";
      child.stdout!.on("data", (chunk) => (output += chunk));
      child.stderr!.on("data", (chunk) => (output += chunk));
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const [code, signal] = await once(child, "exit");
      clearTimeout(timer);
      expect({ code, signal, output: output.trim() }).toEqual({ code: 0, signal: null, output: "closed" });
    },
  );
});
