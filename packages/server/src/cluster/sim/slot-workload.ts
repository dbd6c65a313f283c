import { KEY_SLOTS, SlotMap } from "@lock/protocol";

/** The store's first map: the slots in equal shares, cluster after cluster, at version 1. */
export function initialSlotMap(
  clusters: ReadonlyArray<{
    readonly name: string;
    readonly nodes: ReadonlyArray<{ readonly name: string }>;
  }>,
): SlotMap {
  const share = Math.ceil(KEY_SLOTS / clusters.length);
  return SlotMap.of(
    1n,
    new Map(clusters.map(({ name, nodes }) => [name, nodes.map((node) => node.name)])),
    clusters.map(({ name }, index) => ({
      from: index * share,
      to: Math.min(KEY_SLOTS, (index + 1) * share) - 1,
      cluster: name,
    })),
  );
}

/**
 * The workload's keys over several clusters: a read/write lock on a slot of each cluster of `map`
 * (`k<n>`), and a semaphore (`s{k<n>}`) on the first one's slot (its hash tag), so that moving that
 * slot moves two keys, of both kinds.
 */
export function workloadKeys(map: SlotMap): string[] {
  const keys = [...map.clusters.keys()].map((cluster) => {
    for (let n = 0; ; n++) if (map.clusterOf(`k${n}`) === cluster) return `k${n}`;
  });
  return [...keys, `s{${keys[0]}}`];
}
