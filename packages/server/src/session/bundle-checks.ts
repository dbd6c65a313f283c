import { keySlot } from "@lock/protocol";

/**
 * A key of `keys` whose slot differs from the first key's, or undefined if they all share it. With
 * a slot map a bundle must live in one slot: its one grant is served, replicated and moved by one
 * cluster (docs/protocol.md, "Bundles"). Without one, slots do not matter; the caller asks only then.
 */
export function crossSlotKey(keys: readonly string[]): string | undefined {
  const slot = keySlot(keys[0]!);
  return keys.find((key) => keySlot(key) !== slot);
}
