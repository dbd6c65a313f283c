/**
 * Per-slot resources for semaphore permits. Permits of one semaphore are held at the same time, each
 * with its own token, so their tokens cannot order writes to one shared resource: the holder with the
 * lower token would be refused although it holds a live permit. Each slot, though, has one holder at a
 * time, and its successive holders get ever higher tokens, so the exclusive rule holds per slot: fence
 * each permit's writes on its slot's resource.
 *
 * The name is `<key> slot <n>`: lockd keys never contain a space (docs/protocol.md), so the first
 * space ends the key, no escaping is needed, and a slot's resource can never be the name of a lock key
 * (nor of another key's slot).
 */
import { kindOf } from "./arguments.js";
import { FenceError } from "./errors.js";
import { assertResource } from "./resource.js";

/** What slotResource() takes instead of a key and slot: a permit, e.g. the client's Lock. */
export interface SlotLock {
  readonly key: string;
  readonly slot: number;
}

const SLOT_SUFFIX = /^ slot (0|[1-9][0-9]{0,15})$/;

/** Whether `text` could be a lockd key: not empty, no space, no control character (U+0000-U+001F, U+007F). */
function isLockKey(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f) return false;
  }
  return true;
}

/**
 * The resource that fences the permits of `key`'s slot `slot`: `slotResource("tenant:7", 2)` is
 * `"tenant:7 slot 2"`, as is `slotResource(lock)` for a permit with that key and slot.
 *
 * Throws FenceError FENCE_BAD_ARGUMENT when `key` could not be a lockd key (empty, a space, a control
 * character) or `slot` is not an integer >= 0, and FENCE_BAD_RESOURCE when the name would be longer
 * than MAX_RESOURCE_LENGTH.
 */
export function slotResource(lock: SlotLock): string;
export function slotResource(key: string, slot: number): string;
export function slotResource(keyOrLock: string | SlotLock, slotNumber?: number): string {
  const isLock = typeof keyOrLock === "object" && keyOrLock !== null;
  const key: unknown = isLock ? keyOrLock.key : keyOrLock;
  const slot: unknown = isLock ? keyOrLock.slot : slotNumber;
  if (typeof key !== "string" || !isLockKey(key)) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `slotResource() needs a lockd key (no space or control character), got ${typeof key === "string" ? JSON.stringify(key) : kindOf(key)}`,
    );
  }
  assertSlot(slot, "slotResource()");
  const resource = `${key} slot ${slot}`;
  assertResource(resource);
  return resource;
}

/** The key and slot a resource named by slotResource() fences, or undefined for any other name. */
export function parseSlotResource(resource: string): SlotLock | undefined {
  if (typeof resource !== "string") return undefined;
  // The key has no space, so the first space ends it.
  const space = resource.indexOf(" ");
  const key = resource.slice(0, space);
  const match = space > 0 && isLockKey(key) ? SLOT_SUFFIX.exec(resource.slice(space)) : null;
  const slot = Number(match?.[1]);
  return match && Number.isSafeInteger(slot) ? { key, slot } : undefined;
}

/** FENCE_BAD_ARGUMENT unless `slot` is an integer in [0, 2^53-1]. */
export function assertSlot(slot: unknown, caller: string): asserts slot is number {
  if (typeof slot !== "number" || !Number.isSafeInteger(slot) || slot < 0) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `${caller}: a slot is an integer >= 0, got ${typeof slot === "number" ? slot : kindOf(slot)}`,
    );
  }
}
