import { KEY_SLOTS, keySlot, type SlotMap } from "@lock/protocol";
import type { EtcdCluster } from "@lock/testkit";
import { gapMs } from "./grant-gaps.js";
import { loadLine, percentile, printRow } from "./report.js";
import {
  type Deployment,
  GAINS_SERVED,
  halves,
  type SlotCluster,
  SlotMapStore,
  startDeployment,
} from "./slot-clusters.js";
import {
  type HoldersOptions,
  type ProbeResult,
  startHolders,
  startProbes,
  type Worker,
  wallNow,
} from "./slots-workers.js";

/**
 * `pnpm bench:slots move`: moving one slot that holds LOCKS locks (issue #24: "unavailability of
 * that slot (p50/p99) and of other slots (none)"). Two one-node clusters, east (slots 0-8191) and
 * west (8192-16383), over one etcd. Each move: a holder process takes LOCKS keys of one slot
 * (`{tag}:h:<i>`, one hash tag) on the slot's owner; a probe process loops acquire → release on
 * keys of that slot, of another east slot and of a west slot; the bench marks the slot as moving
 * to the other cluster by a compare-and-set of the map in the store, as an operator would, and
 * waits until the target serves it. The slot moves back and forth, BENCH_MOVES (default
 * 10) times for each way the holders leave:
 *
 * - release: the holders release every lock at once as soon as the bench's write of the move
 *   returned (a holder that watches the map);
 * - expire: the holders keep their locks (LEASE_MS, auto-extended until the source refuses the
 *   extension, SLOT_MOVING) and let the leases run out.
 *
 * Unavailability of a key: the longest stretch between two consecutive grants to its probe (the
 * last grant before the move and the first after, on the target). The probes' client retries
 * SLOT_MOVING after its retryIntervalMs (default 200 ms), which is part of every figure.
 * The move's steps, from its write, by the nodes' logs: the source committed it (its holders gone),
 * the target serves the slot (a fresh epoch in use). After each move, a control sample: the same
 * holders (releasing at once, or extending) and probes for as long, with no move: the other slots'
 * longest gaps are set beside it, since the holders' own bursts (10,000 releases or extensions at
 * once) stall every slot of their cluster for a moment, move or not.
 *
 * BENCH_TIMELINE=1 prints each sample's longest gaps, in ms from the write of the move.
 *
 * Pinning: east on cpu 0; west, etcd, the holder and the probe processes on cpu 1.
 */
const LOCKS = Number(process.env.BENCH_MOVE_LOCKS ?? 10_000);
const MOVES = Number(process.env.BENCH_MOVES ?? 10);
const LEASE_MS = 2000;
const PROBES_PER_GROUP = 4;
const HALF = KEY_SLOTS / 2;
const TIMELINE = process.env.BENCH_TIMELINE === "1";

const WAYS: Record<string, Omit<HoldersOptions, "server" | "keyPrefix" | "count">> = {
  release: { leaseMs: 30_000, autoExtend: false },
  expire: { leaseMs: LEASE_MS, autoExtend: true },
};

/** The first `count` keys `<prefix><n>` whose slot passes `accept`. */
function keysWhere(prefix: string, count: number, accept: (slot: number) => boolean): string[] {
  const keys: string[] = [];
  for (let n = 0; keys.length < count; n++) if (accept(keySlot(`${prefix}${n}`))) keys.push(`${prefix}${n}`);
  return keys;
}

interface Sample {
  /** The move's write → the target serving (or as long, without a move). */
  readonly ms: number;
  readonly probes: readonly ProbeResult[];
  /** The moving slot's gaps that do not span the move: 0 unless something else stalled it. */
  readonly outside: number;
  /** A move's steps in ms from its write: source committed, target serving, holders released. */
  readonly steps: MoveSteps | undefined;
}

function stepsFrom(steps: MoveSteps | undefined, begun: number): MoveSteps | undefined {
  if (steps === undefined) return undefined;
  const { committed, served, released } = steps;
  return {
    committed: committed - begun,
    served: served - begun,
    released: released === undefined ? undefined : released - begun,
  };
}

interface MoveSetup {
  readonly deployment: Deployment;
  readonly store: SlotMapStore;
  readonly slot: number;
  /** The holders' keys: `<holderPrefix><i>`, LOCKS of them, all in `slot`. */
  readonly holderPrefix: string;
  readonly probeGroups: Readonly<Record<string, readonly string[]>>;
}

/** Between the write of a move and the target serving; or the control's stretch without a move. */
type Window = (holders: Worker) => Promise<{
  readonly begun: number;
  readonly ended: number;
  /** A move's steps, by the source's and the target's logs, and the holders (`release` moves). */
  readonly steps?: MoveSteps;
}>;

/** When each step of a move happened (ms since the epoch). */
interface MoveSteps {
  readonly committed: number;
  readonly served: number;
  readonly released: number | undefined;
}

/**
 * The slot moves from `source` to `target`, the holders leaving `way`; the window ends when the
 * target logs that it serves the slot (a fresh epoch in use).
 */
function move(setup: MoveSetup, map: SlotMap, source: SlotCluster, target: SlotCluster, way: string): Window {
  return async (holders) => {
    const committed = source.logged("slot move committed");
    const served = target.logged(GAINS_SERVED);
    const released = way === "release" ? holders.next((line) => "released" in line).then(wallNow) : undefined;
    const begun = wallNow();
    await setup.store.beginMove(map, setup.slot, target.name);
    if (way === "release") holders.step();
    const steps = {
      served: (await served).time,
      committed: (await committed).time,
      released: await released,
    };
    return { begun, ended: wallNow(), steps };
  };
}

/** The control: the same holders and probes for `ms`, the holders leaving `way`, and no move. */
function withoutMove(ms: number, way: string): Window {
  return async (holders) => {
    const begun = wallNow();
    if (way === "release") holders.step();
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { begun, ended: wallNow() };
  };
}

/**
 * The holders hold the slot's keys on its owner, the probes run, then `window`; every probe's
 * longest gap. Without a move the holders then release what they still hold, for the next sample.
 */
async function sample(setup: MoveSetup, way: string, controlMs?: number): Promise<Sample> {
  const map = await setup.store.read();
  const cluster = (name: string) => setup.deployment.clusters.find((it) => it.name === name)!;
  const source = cluster(map.rangeOf(setup.slot).cluster);
  const target = cluster(source.name === "east" ? "west" : "east");
  const window =
    controlMs === undefined ? move(setup, map, source, target, way) : withoutMove(controlMs, way);
  const workers: Worker[] = [];
  try {
    const holders = startHolders("1", {
      server: source.address,
      keyPrefix: setup.holderPrefix,
      count: LOCKS,
      ...WAYS[way]!,
    });
    workers.push(holders);
    await holders.next((line) => "held" in line);
    const probes = startProbes("1", {
      server: cluster("east").address,
      groups: setup.probeGroups,
      waitMs: 30_000,
    });
    workers.push(probes);
    await probes.next((line) => "ready" in line);
    const { begun, ended, steps } = await window(holders);
    const results = probes.next<{ probes: ProbeResult[] }>((line) => "probes" in line);
    probes.step();
    const { probes: found } = await results;
    if (controlMs !== undefined && way === "expire") {
      const released = holders.next((line) => "released" in line);
      holders.step();
      await released;
    }
    const moving = found.filter((probe) => probe.group === "moving");
    const outside = moving.filter(({ longest }) => longest.to < begun || longest.from > ended).length;
    if (TIMELINE)
      printTimeline(
        `${way} ${controlMs === undefined ? `${source.name}->${target.name}` : "no move"}`,
        found,
        begun,
        ended,
      );
    return { ms: ended - begun, probes: found, outside, steps: stepsFrom(steps, begun) };
  } finally {
    for (const worker of workers) worker.stop();
  }
}

/** Each group's longest gap, in ms from the write of the move (BENCH_TIMELINE=1): where the time went. */
function printTimeline(name: string, probes: readonly ProbeResult[], begun: number, ended: number): void {
  const spans = (group: string) =>
    probes
      .filter((probe) => probe.group === group)
      .map(({ longest }) => `${Math.round(longest.from - begun)}..${Math.round(longest.to - begun)}`)
      .join(" ");
  printRow(`  ${name}`, {
    end: ended - begun,
    moving: spans("moving"),
    east: spans("east"),
    west: spans("west"),
  });
}

const sorted = (values: number[]) => values.sort((a, b) => a - b);

function gaps(samples: readonly Sample[], group: string): number[] {
  return sorted(
    samples.flatMap((s) => s.probes.filter((p) => p.group === group).map((p) => gapMs(p.longest))),
  );
}

function printWay(way: string, moves: readonly Sample[], controls: readonly Sample[]): void {
  const moving = gaps(moves, "moving");
  printRow(`${way}: moving slot unavailable`, {
    p50_ms: percentile(moving, 50),
    p99_ms: percentile(moving, 99),
    max_ms: moving.at(-1)!,
    gaps: String(moving.length),
    gaps_outside_move: String(moves.reduce((sum, sample) => sum + sample.outside, 0)),
  });
  const step = (name: keyof MoveSteps) => sorted(moves.flatMap((sample) => sample.steps?.[name] ?? []));
  const [committed, served, released] = [step("committed"), step("served"), step("released")];
  printRow(`${way}: move from its write`, {
    committed_p50_ms: percentile(committed, 50),
    committed_max_ms: committed.at(-1)!,
    target_serves_p50_ms: percentile(served, 50),
    target_serves_max_ms: served.at(-1)!,
    ...(released.length > 0 ? { holders_released_p50_ms: percentile(released, 50) } : {}),
  });
  for (const group of ["east", "west"]) {
    const [during, without] = [gaps(moves, group), gaps(controls, group)];
    printRow(`${way}: ${group} other slots, gap`, {
      p50_ms: percentile(during, 50),
      max_ms: during.at(-1)!,
      without_move_p50_ms: percentile(without, 50),
      without_move_max_ms: without.at(-1)!,
    });
  }
}

export async function moveSection(etcd: EtcdCluster): Promise<void> {
  console.log(
    `\n# move: one slot holding ${LOCKS.toLocaleString("en-US")} locks, east <-> west, ${MOVES} moves per way` +
      ` (east cpu 0; west, etcd, holders, probes cpu 1; load ${loadLine()})`,
  );
  const [tag] = keysWhere("m", 1, (slot) => slot < HALF);
  const slot = keySlot(tag!);
  const setup = {
    deployment: await startDeployment(
      etcd,
      [
        { name: "east", cpu: "0" },
        { name: "west", cpu: "1" },
      ],
      halves("east", "west"),
    ),
    slot,
    holderPrefix: `{${tag}}:h:`,
    probeGroups: {
      moving: Array.from({ length: PROBES_PER_GROUP }, (_, i) => `{${tag}}:p:${i}`),
      east: keysWhere("pe:", PROBES_PER_GROUP, (s) => s < HALF && s !== slot),
      west: keysWhere("pw:", PROBES_PER_GROUP, (s) => s >= HALF),
    },
  };
  const store = new SlotMapStore(setup.deployment.url);
  try {
    for (const way of Object.keys(WAYS)) {
      const moves: Sample[] = [];
      const controls: Sample[] = [];
      for (let round = 0; round < MOVES; round++) {
        moves.push(await sample({ ...setup, store }, way));
        controls.push(await sample({ ...setup, store }, way, moves.at(-1)!.ms));
      }
      printWay(way, moves, controls);
    }
  } finally {
    await store.close();
    setup.deployment.stop();
  }
}
