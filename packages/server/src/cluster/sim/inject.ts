import type { Fault } from "./nemesis.js";
import type { Connection } from "./network.js";
import type { SimWorld } from "./world.js";

/**
 * Puts a planned fault (nemesis.ts) on the world's clock: it starts at `fault.at` and is undone
 * `forMs` later. `clients` names the applications' hosts, by index, for the faults that reach them
 * (a partition puts each on one side; a client reset drops one of their connections).
 */
export function scheduleFault(fault: Fault, world: SimWorld, clients: readonly string[]): void {
  const { scheduler, nodes, network, names } = world;
  const at = (time: number, run: () => void) => scheduler.at(time, run);
  const end = fault.at + fault.forMs;
  switch (fault.kind) {
    case "kill":
    case "stop": {
      const node = nodes[fault.node]!;
      at(fault.at, () => (fault.kind === "kill" ? node.kill() : node.stop()));
      at(end, () => {
        if (!node.up) node.start();
      });
      return;
    }
    case "stall": {
      const node = nodes[fault.node]!;
      at(fault.at, () => node.pause());
      at(end, () => node.resume());
      return;
    }
    case "partition": {
      const pairs = partitionPaths(fault, names, clients);
      at(fault.at, () => {
        for (const [from, to] of pairs) network.cut(from, to);
      });
      at(end, () => {
        for (const [from, to] of pairs) network.uncut(from, to);
      });
      return;
    }
    case "one-way":
    case "delay": {
      const from = names[fault.from]!;
      const to = names[fault.to]!;
      const delayMs = fault.kind === "delay" ? fault.delayMs : 0;
      at(fault.at, () => (delayMs > 0 ? network.setDelay(from, to, delayMs) : network.cut(from, to)));
      at(end, () => (delayMs > 0 ? network.setDelay(from, to, 0) : network.uncut(from, to)));
      return;
    }
    case "reset":
    case "client-reset": {
      const name = names[fault.node]!;
      // A peer connection joins two nodes; a client connection a node and an application.
      const wanted = fault.kind === "reset" ? names : clients;
      const other = (c: Connection) => (c.hosts[0] === name ? c.hosts[1] : c.hosts[0]);
      at(fault.at, () => network.resetOne((c) => c.hosts.includes(name) && wanted.includes(other(c))));
      return;
    }
    case "store-cut": {
      const name = names[fault.node]!;
      at(fault.at, () => world.store?.cut(name, true));
      at(end, () => world.store?.cut(name, false));
      return;
    }
    case "store-answers-lost": {
      const name = names[fault.node]!;
      at(fault.at, () => world.store?.loseAnswers(name, true));
      at(end, () => world.store?.loseAnswers(name, false));
      return;
    }
    case "store-slow":
      at(fault.at, () => world.store?.slow(fault.delayMs));
      at(end, () => world.store?.slow(0));
      return;
    case "move":
      at(fault.at, () => world.operator?.move(fault));
      return;
    case "restart-all":
      at(fault.at, () => {
        for (const node of nodes) node.kill();
      });
      at(end, () => {
        for (const node of nodes) if (!node.up) node.start();
      });
      return;
  }
}

/** Both directions of every path across the partition: node to node, and application to node. */
function partitionPaths(
  fault: Extract<Fault, { kind: "partition" }>,
  names: readonly string[],
  clients: readonly string[],
): Array<[string, string]> {
  const side = (hosts: readonly string[], inside: readonly number[]) =>
    hosts.map((host, index) => ({ host, inside: inside.includes(index) }));
  const nodes = side(names, fault.side);
  const hosts = [...nodes, ...side(clients, fault.clients)];
  const pairs: Array<[string, string]> = [];
  for (const a of hosts)
    for (const b of nodes) if (a.host !== b.host && a.inside !== b.inside) pairs.push([a.host, b.host]);
  for (const a of nodes)
    for (const b of hosts.slice(nodes.length)) if (a.inside !== b.inside) pairs.push([a.host, b.host]);
  return pairs;
}
