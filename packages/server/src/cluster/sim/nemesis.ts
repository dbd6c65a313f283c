import type { Rng } from "./rng.js";

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
  | { readonly kind: "store-slow"; readonly at: number; readonly forMs: number; readonly delayMs: number };

const KINDS: ReadonlyArray<readonly [Fault["kind"], number]> = [
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
const COORDINATED_KINDS: ReadonlyArray<readonly [Fault["kind"], number]> = [
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
  kinds: ReadonlyArray<readonly [Fault["kind"], number]>,
  nodes: number,
  clients: number,
  at: number,
): Fault {
  let roll = rng.int(
    1,
    kinds.reduce((sum, [, weight]) => sum + weight, 0),
  );
  let kind: Fault["kind"] = "kill";
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
  }
}
