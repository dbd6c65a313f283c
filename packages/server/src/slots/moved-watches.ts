import type { LockNode } from "../node.js";
import type { SlotGate } from "./slot-gate.js";

/**
 * Ends the watches of keys whose slot this cluster no longer serves once the slot map changes (a
 * move committed): each watcher is pushed the `S O <key> …` redirect a new watch would get, and
 * watches the key again in the cluster that serves it now (docs/protocol.md, "Watching a key").
 */
export function endWatchesOfMovedSlots(gate: SlotGate, node: LockNode): void {
  gate.onChange(() => {
    if (node.watches.count === 0) return;
    node.watches.endWhere((key) => {
      const verdict = gate.check({ op: "O", key }, node.serving);
      return verdict?.kind === "redirect" ? verdict.reply : undefined;
    });
  });
}
