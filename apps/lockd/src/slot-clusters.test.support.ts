import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openCoordinationStore } from "@lock/coordinator";
import { SlotMap } from "@lock/protocol";
import { SLOT_MAP_DOCUMENT } from "@lock/server";
import { EtcdCluster, LineClients, LockdCluster } from "@lock/testkit";
import { afterAll, afterEach, beforeAll, expect } from "vitest";

/**
 * Several clusters over one key space in a test file: one real etcd for the file, and one-node lockd
 * clusters started under a slot map in it (`--slot-map`), each under its own etcd prefix per test.
 * Registers the file's hooks: whatever a test started (clusters, clients, files) is stopped after it.
 */
export function slotClusters() {
  let etcd: EtcdCluster;
  const cleanup: Array<() => Promise<void> | void> = [];
  const lines = new LineClients();
  beforeAll(async () => {
    etcd = await EtcdCluster.start({ members: 1 });
  }, 30_000);
  afterEach(async () => {
    lines.closeAll();
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  afterAll(async () => {
    await etcd?.dispose();
  });
  /** A fresh store prefix on the file's etcd, as lockd's `--coordinator` takes it. */
  const coordinatorUrl = () =>
    `etcd://${etcd.endpoints.join(",")}/lock-test-${randomBytes(4).toString("hex")}/`;
  /**
   * Starts a one-node cluster `name` on the store at `url` with `--slot-map` `map` (default: a
   * placeholder, this cluster alone, for a test that writes the real map once addresses are known).
   */
  const start = async (
    url: string,
    name: string,
    args: readonly string[] = [],
    map: object = { clusters: { [name]: ["127.0.0.1:1"] }, ranges: [{ from: 0, to: 16383, cluster: name }] },
  ): Promise<LockdCluster> => {
    const dir = mkdtempSync(join(tmpdir(), "lockd-slots-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "slots.json");
    writeFileSync(file, JSON.stringify(map));
    const cluster = await LockdCluster.start({
      nodes: 1,
      args: [
        "--coordinator",
        url,
        "--cluster-name",
        name,
        "--coordinator-lease",
        "1",
        "--slot-map",
        file,
        ...args,
      ],
    });
    cleanup.push(() => cluster.dispose());
    await cluster.settled();
    return cluster;
  };
  const defer = (step: () => Promise<void> | void) => void cleanup.push(step);
  return {
    lines,
    coordinatorUrl,
    start,
    /** Runs `step` after the test. */
    defer,
    /**
     * East and west, one node each (with `args`), over a fresh store prefix, each serving half of the
     * slot map (east 0-8191, west 8192-16383), and both following it: line probes on each node.
     */
    halves: (args: readonly string[] = []) => halves({ start, url: coordinatorUrl(), lines, defer }, args),
  };
}

interface Harness {
  readonly start: (url: string, name: string, args?: readonly string[]) => Promise<LockdCluster>;
  readonly url: string;
  readonly lines: LineClients;
  readonly defer: (step: () => Promise<void> | void) => void;
}

async function halves({ start, url, lines, defer }: Harness, args: readonly string[]) {
  const east = await start(url, "east", args);
  const west = await start(url, "west", args);
  const address = (cluster: LockdCluster) => cluster.proxies[0]!.address;
  // Placeholders seeded the store: the real map, now that both clusters' addresses are known.
  const map = SlotMap.of(
    1n,
    new Map([
      ["east", [address(east)]],
      ["west", [address(west)]],
    ]),
    [
      { from: 0, to: 8191, cluster: "east" },
      { from: 8192, to: 16383, cluster: "west" },
    ],
  );
  const store = openCoordinationStore(url);
  defer(() => store.close());
  const current = await store.readDocument(SLOT_MAP_DOCUMENT);
  expect(await store.writeDocument(SLOT_MAP_DOCUMENT, map.toDocument(), current!.version)).toBeDefined();
  const eastProbe = await lines.connect(east.nodes[0]!.port);
  const westProbe = await lines.connect(west.nodes[0]!.port);
  // Both nodes follow the new map: each redirects the other's keys (keySlot: foo 12182, bar 5061).
  await expect
    .poll(() => eastProbe.request("Y foo 1"), { timeout: 10_000 })
    .toMatch(/^S Y foo 12182 \d+ west /);
  await expect
    .poll(() => westProbe.request("Y bar 1"), { timeout: 10_000 })
    .toMatch(/^S Y bar 5061 \d+ east /);
  return { east, west, store, eastProbe, westProbe, address };
}
