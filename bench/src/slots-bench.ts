import type { EtcdCluster } from "@lock/testkit";
import { loadLine } from "./report.js";
import { startPinnedEtcd } from "./slot-clusters.js";
import { clientSection } from "./slots-bench-client.js";
import { moveSection } from "./slots-bench-move.js";
import { scaleSection } from "./slots-bench-scale.js";

/**
 * Several lockd clusters over one key space (issue #24, "Key slots" in docs/protocol.md), with real
 * one-node clusters over one real etcd (pinned to cpu 1). Run:
 * `pnpm bench:slots [client|move|scale]`; each section's file says what it measures and how it pins.
 *
 * - client (slots-bench-client.ts): the slot-aware client against a one-cluster deployment, within
 *   5 % of today's client.
 * - move (slots-bench-move.ts): moving a slot that holds 10,000 locks: how long that slot and the
 *   others cannot be taken.
 * - scale (slots-bench-scale.ts): two clusters, one per core, against one cluster on one core.
 */
const sections: Record<string, (etcd: EtcdCluster) => Promise<void>> = {
  client: clientSection,
  move: moveSection,
  scale: scaleSection,
};
const only = process.argv[2];
if (only !== undefined && !(only in sections))
  throw new Error(`unknown section ${only}: ${Object.keys(sections).join(", ")}`);
console.log(
  `lockd slots benchmark  node ${process.version}  ${new Date().toISOString()}  load ${loadLine()}`,
);
const etcd = await startPinnedEtcd("1");
try {
  for (const [name, run] of Object.entries(sections)) {
    if (only === undefined || only === name) await run(etcd);
  }
} finally {
  await etcd.dispose();
}
process.exit(0);
