import type { Rng } from "./rng.js";
import type { MoveRequest } from "./slot-operator.js";

/** One fault the nemesis injects at `at`, undone `forMs` later. Nodes are indexes into --peers. */
export type Fault =
  | { readonly kind: "kill"; readonly at: number; readonly forMs: number; readonly node: number }
  | { readonly kind: "stop"; readonly at: number; readonly forMs: number; readonly node: number }
  | { readonly kind: "stall"; readonly at: number; readonly forMs: number; readonly node: number }
  | {
      readonly kind: "partition";
      readonly at: number;
      readonly forMs: number;
      readonly side: readonly number[];
      /** The applications (client indexes) on `side`'s side; the others are with the rest. */
      readonly clients: readonly number[];
    }
  | {
      readonly kind: "one-way";
      readonly at: number;
      readonly forMs: number;
      readonly from: number;
      readonly to: number;
    }
  | {
      readonly kind: "delay";
      readonly at: number;
      readonly forMs: number;
      readonly from: number;
      readonly to: number;
      readonly delayMs: number;
    }
  | { readonly kind: "reset"; readonly at: number; readonly forMs: 0; readonly node: number }
  /** A middlebox drops one client connection of the node: both ends see it close. */
  | { readonly kind: "client-reset"; readonly at: number; readonly forMs: 0; readonly node: number }
  | { readonly kind: "restart-all"; readonly at: number; readonly forMs: number }
  /** Coordinated runs: the node's link to the store is cut both ways. */
  | { readonly kind: "store-cut"; readonly at: number; readonly forMs: number; readonly node: number }
  /** Coordinated runs: the store's answers to the node are lost; its calls still take effect. */
  | {
      readonly kind: "store-answers-lost";
      readonly at: number;
      readonly forMs: number;
      readonly node: number;
    }
  /** Coordinated runs: every store call takes `delayMs` longer each way. */
  | { readonly kind: "store-slow"; readonly at: number; readonly forMs: number; readonly delayMs: number }
  /**
   * Several clusters: the operator begins moving `key`'s slot and the `width` after it to the
   * cluster `shift` places after its owner (slot-operator.ts), and moves it back once committed if
   * `back`. Its source commits it.
   */
  | ({ readonly kind: "move"; readonly at: number; readonly forMs: 0 } & MoveRequest);

/** The faults drawn at random (moves are planned apart: planMoves). */
type RandomKind = Exclude<Fault["kind"], "move">;

const KINDS: ReadonlyArray<readonly [RandomKind, number]> = [
  ["kill", 3],
  ["stop", 2],
  ["stall", 3],
  ["partition", 3],
  ["one-way", 2],
  ["delay", 2],
  ["reset", 2],
  ["client-reset", 2],
  ["restart-all", 1],
];
/** With a coordinator, the store's faults too. */
const COORDINATED_KINDS: ReadonlyArray<readonly [RandomKind, number]> = [
  ...KINDS,
  ["store-cut", 3],
  ["store-slow", 2],
  ["store-answers-lost", 2],
];

/**
 * A seeded schedule of `steps` faults over `nodes` nodes and `clients` applications, from `startMs`
 * (`store`: a coordinated run, whose store has faults of its own).
 */
export function planFaults(
  rng: Rng,
  nodes: number,
  steps: number,
  startMs: number,
  clients = 0,
  store = false,
): Fault[] {
  const faults: Fault[] = [];
  const kinds = store ? COORDINATED_KINDS : KINDS;
  let at = startMs;
  for (let i = 0; i < steps; i++) {
    at += rng.int(100, 1_500);
    faults.push(pickFault(rng, kinds, nodes, clients, at));
  }
  return faults;
}

function pickFault(
  rng: Rng,
  kinds: ReadonlyArray<readonly [RandomKind, number]>,
  nodes: number,
  clients: number,
  at: number,
): Fault {
  let roll = rng.int(
    1,
    kinds.reduce((sum, [, weight]) => sum + weight, 0),
  );
  let kind: RandomKind = "kill";
  for (const [candidate, weight] of kinds) {
    roll -= weight;
    if (roll <= 0) {
      kind = candidate;
      break;
    }
  }
  const node = rng.int(0, nodes - 1);
  const forMs = rng.int(100, 3_000);
  switch (kind) {
    case "kill":
    case "stop":
    case "stall":
    case "store-cut":
    case "store-answers-lost":
      return { kind, at, forMs, node };
    case "store-slow":
      return { kind, at, forMs, delayMs: rng.int(100, 1_500) };
    case "partition": {
      // A non-empty proper subset of the nodes on one side.
      const side = [...Array(nodes).keys()].filter(() => rng.chance(0.5));
      if (side.length === 0) side.push(node);
      if (side.length === nodes) side.pop();
      const withSide = [...Array(clients).keys()].filter(() => rng.chance(0.5));
      return { kind, at, forMs, side, clients: withSide };
    }
    case "one-way":
    case "delay": {
      const to = (node + rng.int(1, nodes - 1)) % nodes;
      return kind === "one-way"
        ? { kind, at, forMs, from: node, to }
        : { kind, at, forMs, from: node, to, delayMs: rng.int(20, 600) };
    }
    case "reset":
    case "client-reset":
      return { kind, at, forMs: 0, node };
    case "restart-all":
      return { kind, at, forMs: rng.int(50, 1_500) };
  }
}

/**
 * Several clusters: 2 to 5 slot moves between `startMs` and `endMs`, of the slots of `keys` (some
 * with a few slots after it), to another of `clusters` clusters, half of them moved back (A→B→A).
 */
export function planMoves(
  rng: Rng,
  keys: readonly string[],
  clusters: number,
  startMs: number,
  endMs: number,
): Fault[] {
  const moves: Fault[] = [];
  const count = rng.int(2, 5);
  for (let i = 0; i < count; i++)
    moves.push({
      kind: "move",
      at: rng.int(startMs, Math.max(startMs, endMs)),
      forMs: 0,
      key: rng.pick(keys),
      width: rng.chance(0.3) ? rng.int(1, 8) : 0,
      shift: rng.int(1, clusters - 1),
      back: rng.chance(0.5),
    });
  return moves.sort((a, b) => a.at - b.at);
}

/** One line of the schedule for a human: what, to whom, from when, for how long. */
export function describeFault(fault: Fault, names: readonly string[]): string {
  const at = `${String(fault.at).padStart(6)} ms`;
  const span = `for ${fault.forMs} ms`;
  switch (fault.kind) {
    case "kill":
      return `${at}  kill -9 ${names[fault.node]}, restart ${span.replace("for ", "after ")}`;
    case "stop":
      return `${at}  SIGTERM ${names[fault.node]} (graceful), restart ${span.replace("for ", "after ")}`;
    case "stall":
      return `${at}  SIGSTOP ${names[fault.node]} ${span}`;
    case "partition": {
      const inside = [...fault.side.map((i) => names[i]), ...fault.clients.map((i) => `c${i}`)];
      return `${at}  partition {${inside.join(",")}} from the others ${span}`;
    }
    case "one-way":
      return `${at}  cut ${names[fault.from]} -> ${names[fault.to]} (one way) ${span}`;
    case "delay":
      return `${at}  delay ${names[fault.from]} -> ${names[fault.to]} by ${fault.delayMs} ms ${span}`;
    case "reset":
      return `${at}  reset a peer connection of ${names[fault.node]}`;
    case "client-reset":
      return `${at}  reset a client connection of ${names[fault.node]}`;
    case "restart-all":
      return `${at}  kill -9 every node, restart all after ${fault.forMs} ms`;
    case "store-cut":
      return `${at}  cut ${names[fault.node]} from the store ${span}`;
    case "store-answers-lost":
      return `${at}  lose the store's answers to ${names[fault.node]} ${span}`;
    case "store-slow":
      return `${at}  slow the store by ${fault.delayMs} ms each way ${span}`;
    case "move": {
      const slots =
        fault.width > 0 ? `the slot of ${fault.key} and ${fault.width} after it` : `the slot of ${fault.key}`;
      const back = fault.back ? ", and back once committed" : "";
      return `${at}  begin moving ${slots} to the cluster ${fault.shift} after its owner${back}`;
    }
  }
}
