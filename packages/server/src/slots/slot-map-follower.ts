import { SlotMap, SlotMapError } from "@lock/protocol";
import type { CoordinationStore, VersionedDocument } from "../coordination/store.js";
import type { SlotGate } from "./slot-gate.js";

/** The coordination store's document that holds the slot map, one for every cluster of a store prefix. */
export const SLOT_MAP_DOCUMENT = "slots";

export interface SlotMapEvents {
  /** A newer map is in force on this node. */
  mapChanged(map: SlotMap): void;
  /** The store's document is not a valid map (written by hand?): the node keeps the map it had. */
  mapRefused(version: bigint, error: SlotMapError): void;
  /** The document was deleted: the node keeps the map it had (an operator must write one). */
  mapDeleted(): void;
  /** Seeding the store failed (it is retried by the next start; the watch goes on). */
  seedFailed(error: unknown): void;
}

/**
 * Keeps a node's SlotGate on the store's slot map: writes `seed` (lockd `--slot-map`) as the first
 * version if the store has no map yet (a compare-and-set on "absent", so of several nodes starting
 * at once one writes it and the others read it), then follows the document's watch. The map in the
 * store wins over the file once it exists: slots move by changing the document, never by editing
 * files and restarting.
 */
export function followSlotMap(
  store: CoordinationStore,
  gate: SlotGate,
  seed: SlotMap | undefined,
  events: SlotMapEvents,
): () => void {
  if (seed !== undefined)
    store
      .writeDocument(SLOT_MAP_DOCUMENT, seed.toDocument(), 0n)
      .catch((error: unknown) => events.seedFailed(error));
  return store.watchDocument(SLOT_MAP_DOCUMENT, (document) => {
    if (document === undefined) {
      if (gate.map !== undefined) events.mapDeleted();
      return;
    }
    const map = slotMapOf(document);
    if (map instanceof SlotMapError) events.mapRefused(document.version, map);
    else if (gate.update(map)) events.mapChanged(map);
  });
}

/** The store's document as a map, or why it is not a valid one (written by hand?). */
export function slotMapOf(document: VersionedDocument): SlotMap | SlotMapError {
  try {
    return SlotMap.fromDocument(document.version, document.value);
  } catch (error) {
    if (error instanceof SlotMapError) return error;
    throw error;
  }
}
