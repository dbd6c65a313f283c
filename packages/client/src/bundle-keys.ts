import { keySlot, MAX_BUNDLE_LINE_KEYS, type SlotMap } from "@lock/protocol";
import { InvalidArgumentError, LockServerError } from "./errors.js";
import { checkKey } from "./options.js";

/**
 * The keys of an `acquireAll` call as they go on the wire: checked, de-duplicated and in code-point
 * (UTF-8 byte) order, the order lockd holds them in, so the first is the one every reply names.
 * With a slot map they must share one slot: lockd would refuse them with CROSS_SLOT, so the call
 * fails with that code before anything is sent.
 */
export function bundleKeys(keys: readonly string[], maxKeyBytes: number, map: SlotMap | undefined): string[] {
  if (!Array.isArray(keys) || keys.length === 0)
    throw new InvalidArgumentError("keys must be a non-empty array of keys");
  for (const key of keys) checkKey(key, maxKeyBytes);
  const sorted = [...new Set(keys)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  if (sorted.length > MAX_BUNDLE_LINE_KEYS)
    throw new InvalidArgumentError(`a bundle has at most ${MAX_BUNDLE_LINE_KEYS} keys, got ${sorted.length}`);
  if (map !== undefined) {
    const slot = keySlot(sorted[0]!);
    const other = sorted.find((key) => keySlot(key) !== slot);
    if (other !== undefined)
      throw new LockServerError(
        "CROSS_SLOT",
        `${JSON.stringify(other)} is in another key slot than ${JSON.stringify(sorted[0])}: tag a bundle's keys alike ({tag}:key)`,
      );
  }
  return sorted;
}
