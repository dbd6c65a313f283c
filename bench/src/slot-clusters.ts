import { type ChildProcess, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { openCoordinationStore } from "@lock/coordinator";
import { KEY_SLOTS, SlotMap, type SlotRange } from "@lock/protocol";
import { type CoordinationStore, SLOT_MAP_DOCUMENT } from "@lock/server";
import { EtcdCluster } from "@lock/testkit";
import { freePort, LOCKD_MAIN, type Served, spawnPinned } from "./spawn.js";

/**
 * One-node lockd clusters over one etcd for bench/src/slots-bench.ts: each node pinned to a core
 * of its own choosing, all of them under one `--coordinator` prefix, with or without a slot map
 * (`--slot-map`, "Key slots" in docs/protocol.md). The map file names every cluster's real address,
 * so the first node seeds the store with the map the bench wants and the others find it there.
 */

/** A single-member etcd pinned to `cpu` (its fsyncs and lease renewals stay off lockd's core). */
export async function startPinnedEtcd(cpu: string): Promise<EtcdCluster> {
  const etcd = await EtcdCluster.start({ members: 1 });
  for (const member of etcd.members)
    execFileSync("taskset", ["-pc", cpu, String(member.child.pid)], { stdio: "ignore" });
  return etcd;
}

export interface ClusterSpec {
  readonly name: string;
  /** The core its one node is pinned to. */
  readonly cpu: string;
}

export interface SlotCluster extends Served {
  readonly name: string;
  /** Its one node's client address, as the map names it. */
  readonly address: string;
  /** The node's next log line (from now on) whose message starts with `message`; `time` in ms since the epoch. */
  logged(message: string): Promise<{ readonly time: number }>;
}

export interface Deployment {
  readonly clusters: readonly SlotCluster[];
  /** The `--coordinator` URL of its store prefix. */
  readonly url: string;
  stop(): void;
}

/** The map giving `ranges` (every slot) to the named clusters at `addresses`. */
export function mapDocument(addresses: ReadonlyMap<string, string>, ranges: readonly SlotRange[]): string {
  const clusters = Object.fromEntries([...addresses].map(([name, address]) => [name, [address]]));
  return JSON.stringify({ clusters, ranges });
}

/** Every slot to `name`. */
export function allSlotsTo(name: string): SlotRange[] {
  return [{ from: 0, to: KEY_SLOTS - 1, cluster: name }];
}

/** The lower half of the slots to `lower`, the upper half to `upper`. */
export function halves(lower: string, upper: string): SlotRange[] {
  const middle = KEY_SLOTS / 2;
  return [
    { from: 0, to: middle - 1, cluster: lower },
    { from: middle, to: KEY_SLOTS - 1, cluster: upper },
  ];
}

/** Every slot to `name` but `slot`, which is `other`'s. */
export function allSlotsBut(slot: number, name: string, other: string): SlotRange[] {
  const ranges: SlotRange[] = [{ from: slot, to: slot, cluster: other }];
  if (slot > 0) ranges.unshift({ from: 0, to: slot - 1, cluster: name });
  if (slot < KEY_SLOTS - 1) ranges.push({ from: slot + 1, to: KEY_SLOTS - 1, cluster: name });
  return ranges;
}

/** The CPU time a process has run, in ms (/proc/<pid>/schedstat, Linux). */
export function cpuMsOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
}

/**
 * Starts one single-node cluster per spec under a fresh prefix of `etcd`, and resolves once each
 * serves. `ranges` (with `extraClusters`: clusters named in the map that run no node) is the slot
 * map; without it the nodes run with a coordinator and no map, as a lone cluster does today.
 */
export async function startDeployment(
  etcd: EtcdCluster,
  specs: readonly ClusterSpec[],
  ranges?: readonly SlotRange[],
  extraClusters: ReadonlyMap<string, string> = new Map(),
): Promise<Deployment> {
  const url = `etcd://${etcd.endpoints.join(",")}/lock-bench-${randomBytes(4).toString("hex")}/`;
  const dir = mkdtempSync(join(tmpdir(), "lockd-bench-slots-"));
  const tokenFile = join(dir, "peer-token");
  writeFileSync(tokenFile, "bench-peer-token-of-the-cluster\n", { mode: 0o600 });
  const ports = await Promise.all(specs.map(() => freePort()));
  const addresses = new Map(specs.map((spec, i) => [spec.name, `127.0.0.1:${ports[i]}`]));
  const mapArgs: string[] = [];
  if (ranges !== undefined) {
    const file = join(dir, "slots.json");
    writeFileSync(file, mapDocument(new Map([...addresses, ...extraClusters]), ranges));
    mapArgs.push("--slot-map", file);
  }
  const clusters: SlotCluster[] = [];
  const stop = () => {
    for (const cluster of clusters) cluster.stop();
  };
  try {
    for (const [i, spec] of specs.entries()) {
      const address = addresses.get(spec.name)!;
      const args = ["--peers", address, "--peer-token-file", tokenFile, "--node-id", String(i + 1)];
      const coordinator = ["--coordinator", url, "--cluster-name", spec.name, ...mapArgs];
      // One at a time: the first seeds the store with the map file, the others read it from there.
      clusters.push(await startNode(spec, address, [...args, ...coordinator], ranges !== undefined));
    }
  } catch (error) {
    stop();
    throw error;
  }
  return { clusters, url, stop };
}

async function startNode(
  spec: ClusterSpec,
  address: string,
  args: readonly string[],
  mapped: boolean,
): Promise<SlotCluster> {
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-bench-slots-node-"));
  const child = spawnPinned(spec.cpu, [LOCKD_MAIN, "--listen", address, "--data-dir", dataDir, ...args]);
  const stop = () => child.kill("SIGKILL");
  const log = new NodeLog(child);
  // With a map, a node serves its slots once an epoch taken after it read the map is in use.
  try {
    await log.logged(mapped ? GAINS_SERVED : "serving");
  } catch (error) {
    stop();
    throw error;
  }
  const port = Number(address.split(":")[1]);
  return { name: spec.name, address, port, child, stop, logged: (message) => log.logged(message) };
}

/** What a node logs once slots it gained (its first map's included) are served. */
export const GAINS_SERVED = "slots moved here are served";

/** A lockd's JSON log lines, read by one reader for as many waiters as come. */
class NodeLog {
  readonly #waiters = new Set<{
    message: string;
    resolve(entry: { time: number }): void;
    reject(error: Error): void;
  }>();
  #exited: Error | undefined;

  constructor(child: ChildProcess) {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const entry = parseLogLine(line);
      if (entry === undefined) return;
      for (const waiter of this.#waiters) {
        if (!entry.msg.startsWith(waiter.message)) continue;
        this.#waiters.delete(waiter);
        waiter.resolve(entry);
      }
    });
    child.once("exit", (code) => {
      this.#exited = new Error(`lockd exited (${code})`);
      for (const waiter of this.#waiters) waiter.reject(this.#exited);
      this.#waiters.clear();
    });
  }

  logged(message: string): Promise<{ time: number }> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    return new Promise((resolve, reject) => this.#waiters.add({ message, resolve, reject }));
  }
}

function parseLogLine(line: string): { msg: string; time: number } | undefined {
  try {
    const entry = JSON.parse(line) as { msg?: unknown; time?: unknown };
    return typeof entry.msg === "string" && typeof entry.time === "number"
      ? { msg: entry.msg, time: entry.time }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The slot map in the store, through a store client of its own. */
export class SlotMapStore {
  readonly #store: CoordinationStore;

  constructor(url: string) {
    this.#store = openCoordinationStore(url);
  }

  async read(): Promise<SlotMap> {
    const document = await this.#store.readDocument(SLOT_MAP_DOCUMENT);
    if (document === undefined) throw new Error("the store holds no slot map");
    return SlotMap.fromDocument(document.version, document.value);
  }

  /** Marks `slot` as moving to `target` (compare-and-set on `map`'s version); the map written. */
  async beginMove(map: SlotMap, slot: number, target: string): Promise<SlotMap> {
    const next = map.withMoveBegun(slot, slot, target, map.version + 1n);
    const version = await this.#store.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), map.version);
    if (version === undefined) throw new Error(`the slot map changed under the bench (was ${map.version})`);
    return SlotMap.fromDocument(version, next.toDocument());
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
