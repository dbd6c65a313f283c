import { randomUUID } from "node:crypto";
import type { VersionedDocument } from "@lock/server";
import { EtcdCluster, FaultProxy, selfSignedCertificate } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  describeCoordinationContract,
  eventually,
  silentServer,
  takeEpochOnceBack,
} from "../contract.test.support.js";
import { CoordinatorUnavailableError } from "../errors.js";
import { openCoordinationStore } from "../open.js";
import { EtcdGateway } from "./gateway.js";
import { EtcdCoordinationStore } from "./store.js";

let single: EtcdCluster;
beforeAll(async () => {
  single = await EtcdCluster.start();
});
afterAll(async () => {
  await single?.dispose();
});

const prefix = `/test-${randomUUID().slice(0, 8)}/`;
describeCoordinationContract("etcd", {
  open: () => new EtcdCoordinationStore({ endpoints: single.endpoints, prefix }),
  ttlMs: 1000,
  ttlGrainMs: 1000,
});

it("starts the next call at the next member when one hangs", async () => {
  const silent = await silentServer();
  const store = new EtcdCoordinationStore({
    endpoints: [`127.0.0.1:${silent.port}`, ...single.endpoints],
    prefix,
    // The live member must answer within it too, on a loaded machine (300 ms failed CI once on
    // Node 26: the real member's takeEpoch, a read and a transaction, timed out).
    callTimeoutMs: 2_000,
  });
  try {
    await expect(store.readEpoch()).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    expect(await store.takeEpoch(0n)).toBeGreaterThan(0n);
  } finally {
    await store.close();
    await silent.close();
  }
});

it("sees a change its watch's stream missed: a member cut off in silence", async () => {
  const [port] = single.endpoints[0]!.split(":").slice(1);
  await using proxy = await FaultProxy.start(Number(port));
  const watcher = new EtcdCoordinationStore({
    endpoints: [proxy.address, ...single.endpoints],
    prefix,
    callTimeoutMs: 300,
    watchResyncMs: 200,
  });
  const writer = new EtcdCoordinationStore({ endpoints: single.endpoints, prefix });
  try {
    const seen: Array<VersionedDocument | undefined> = [];
    const stop = watcher.watchDocument("silent", (document) => seen.push(document));
    await eventually(() => seen.length === 1, 5000, "the initial state");
    proxy.freeze(); // the stream stays open and brings nothing
    const version = await writer.writeDocument("silent", "missed by the stream", seen[0]?.version ?? 0n);
    await eventually(() => seen.at(-1)?.version === version, 5000, "the change, from a read");
    expect(seen.at(-1)).toEqual({ value: "missed by the stream", version });
    stop();
  } finally {
    await Promise.all([watcher.close(), writer.close()]);
  }
});

describe("etcd: a 3-member cluster", () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await EtcdCluster.start({ members: 3 });
  });
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("agrees across members: one lease holder, distinct epochs, whichever member each store talks to", async () => {
    const stores = cluster.endpoints.map(
      (endpoint) => new EtcdCoordinationStore({ endpoints: [endpoint], prefix: "/across/" }),
    );
    try {
      const outcomes = await Promise.all(
        stores.map((store, index) => store.acquireLease("c", `n${index}`, 5000)),
      );
      expect(outcomes.filter((outcome) => outcome.held)).toHaveLength(1);
      const taken = await Promise.all(stores.flatMap((store) => [store.takeEpoch(0n), store.takeEpoch(0n)]));
      expect(new Set(taken).size).toBe(taken.length);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("keeps taking epochs, renewing the lease and watching after its leader is killed", async () => {
    // The leader first: the store talks to it until it dies, then must move on.
    const leader = await cluster.leader();
    const endpoints = [
      leader.endpoint,
      ...cluster.endpoints.filter((endpoint) => endpoint !== leader.endpoint),
    ];
    const store = new EtcdCoordinationStore({ endpoints, prefix: "/leader-kill/" });
    try {
      const before = await store.takeEpoch(0n);
      const outcome = await store.acquireLease("c", "A", 10_000);
      if (!outcome.held) throw new Error("no lease");
      const seen: Array<VersionedDocument | undefined> = [];
      const stop = store.watchDocument("slots", (document) => seen.push(document));
      await eventually(() => seen.length === 1, 5000, "the initial state");
      await cluster.kill(leader);
      // During the election (about one election timeout) a call may fail; then every call works.
      const after = await takeEpochOnceBack(store, 10_000);
      expect(after).toBeGreaterThan(before);
      expect(await store.renewLease(outcome.lease)).toEqual({ held: true, lease: outcome.lease });
      expect((await cluster.leader()).name).not.toBe(leader.name);
      // The watch's stream was on the dead member: it reads and watches again on a living one.
      const version = await store.writeDocument("slots", "after", 0n);
      await eventually(() => seen.at(-1)?.version === version, 5000, "the change after the leader died");
      stop();
    } finally {
      await store.close();
    }
  });

  it("rejects calls with CoordinatorUnavailableError once the cluster has lost its quorum", async () => {
    const store = new EtcdCoordinationStore({
      endpoints: cluster.endpoints,
      prefix: "/leader-kill/",
      callTimeoutMs: 500,
    });
    try {
      // One member of three left running: it has no leader and cannot get one.
      const running = cluster.members.filter(
        (member) => member.child.exitCode === null && !member.child.signalCode,
      );
      for (const member of running.slice(1)) await cluster.kill(member);
      const calls = [store.takeEpoch(0n), store.readEpoch(), store.acquireLease("q", "A", 2000)];
      for (const outcome of await Promise.allSettled(calls)) {
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(CoordinatorUnavailableError);
      }
    } finally {
      await store.close();
    }
  });
});

describe("etcd: TLS and authentication", () => {
  it("talks HTTPS with a client certificate (etcds://?ca=&cert=&key=)", async () => {
    const certificate = selfSignedCertificate();
    await using cluster = await EtcdCluster.start({ tls: certificate });
    const { certPath, keyPath } = certificate;
    const url = `etcds://${cluster.endpoints[0]}/tls?ca=${certPath}&cert=${certPath}&key=${keyPath}`;
    const store = openCoordinationStore(url, { env: {} });
    const untrusted = openCoordinationStore(`etcds://${cluster.endpoints[0]}/tls`, {
      env: {},
      callTimeoutMs: 500,
    });
    try {
      expect(await store.takeEpoch(0n)).toBe(1n);
      await expect(untrusted.readEpoch()).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    } finally {
      await Promise.all([store.close(), untrusted.close()]);
      certificate.dispose();
    }
  });

  it("authenticates as an etcd user, with the password from a file", async () => {
    await using cluster = await EtcdCluster.start();
    const password = randomUUID();
    const admin = new EtcdGateway({ endpoints: cluster.endpoints });
    const deadline = performance.now() + 5000;
    await admin.call("/v3/auth/role/add", { name: "root" }, deadline);
    await admin.call("/v3/auth/user/add", { name: "root", password }, deadline);
    await admin.call("/v3/auth/user/grant", { user: "root", role: "root" }, deadline);
    await admin.call("/v3/auth/enable", {}, deadline);
    admin.close();
    const env = { LOCKD_COORDINATOR_PASSWORD_FILE: "/run/secrets/etcd" };
    const store = openCoordinationStore(`etcd://root@${cluster.endpoints[0]}/auth`, {
      env,
      readFile: () => Buffer.from(`${password}\n`),
    });
    const anonymous = openCoordinationStore(`etcd://${cluster.endpoints[0]}/auth`, { env: {} });
    try {
      expect(await store.takeEpoch(0n)).toBe(1n);
      expect(await store.acquireLease("c", "A", 2000)).toMatchObject({ held: true });
      await expect(anonymous.readEpoch()).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    } finally {
      await Promise.all([store.close(), anonymous.close()]);
    }
  });
});
