import type { TimerQueue } from "@lock/deadline-heap";
import { SlotMapError } from "@lock/protocol";
import type { CoordinationStore } from "../coordination/store.js";
import type { SlotGate } from "./slot-gate.js";
import { SLOT_MAP_DOCUMENT, slotMapOf } from "./slot-map-follower.js";

/** How long after a failed re-read the next one is sent. */
const REREAD_RETRY_MS = 100;

/**
 * A node that just took its cluster's lease reads the slot map from the store before it serves a
 * key (SlotGate.awaitReread): the map its watch delivered may predate a move its predecessor
 * committed, and granting in a slot that moved away would break the target's fences. The source
 * commits a move only while its lease is valid, so a read after taking the lease sees it.
 * Retried until it succeeds; an invalid document keeps the map the node had (the watch reports it).
 */
export function rereadSlotMap(
  store: CoordinationStore,
  gate: SlotGate,
  timers: TimerQueue,
  failed: (error: unknown) => void,
): void {
  const ticket = gate.awaitReread();
  const attempt = (): void => {
    store.readDocument(SLOT_MAP_DOCUMENT).then(
      (document) => {
        const map = document === undefined ? undefined : slotMapOf(document);
        // An invalid document keeps the map the node had (the watch reports it).
        gate.reread(ticket, map instanceof SlotMapError ? gate.map : map);
      },
      (error: unknown) => {
        failed(error);
        timers.after(REREAD_RETRY_MS, attempt);
      },
    );
  };
  attempt();
}
