import type { HeldGrant, HeldKey, ListHeldInput } from "./engine-types.js";
import { HeldKeyIndex } from "./held-key-index.js";
import type { KeyTable } from "./key-table.js";
import { byToken, type HeldRecord, type KeyState, slotOf } from "./records.js";
import { compareKeys } from "./sorted-keys.js";

/**
 * The engine's held keys as operators page through them (`/locks`, the status page): an ordered
 * index kept beside the key table from the first listing on, and each key shown with every holder.
 */
export class HeldListing<P> {
  readonly #keys: KeyTable<KeyState<P>>;
  /** Built on the first listing (see HeldKeyIndex); undefined until then. */
  #index: HeldKeyIndex | undefined;

  constructor(keys: KeyTable<KeyState<P>>) {
    this.#keys = keys;
  }

  added(key: string): void {
    this.#index?.added(key);
  }

  removed(key: string): void {
    this.#index?.removed(key);
  }

  cleared(): void {
    this.#index?.cleared();
  }

  /** LockEngine.prepareListing. */
  prepare(budget: number): boolean {
    this.#index ??= new HeldKeyIndex(this.#keys.keys(), (key) => this.#keys.has(key));
    return this.#index.build(budget);
  }

  stop(): void {
    this.#index = undefined;
  }

  /** LockEngine.listHeld, leases counted from `now`. */
  list({ prefix, after, limit }: ListHeldInput, now: number): { keys: HeldKey[]; more: boolean } {
    if (this.#index === undefined || !this.#index.ready)
      throw new Error("listHeld before prepareListing completed");
    const keys: HeldKey[] = [];
    const from = after !== undefined && compareKeys(after, prefix) >= 0 ? after : prefix;
    for (const key of this.#index.from(from, from === after)) {
      if (!key.startsWith(prefix)) break;
      const state = this.#keys.get(key)!;
      // A key a queued bundle waits for, that nobody holds yet (bundle.ts), is not listed.
      if (state.holderCount === 0) continue;
      if (keys.length === limit) return { keys, more: true };
      keys.push(heldKey(state, now));
    }
    return { keys, more: false };
  }
}

/** One key as listed: its kind, its holders (oldest first), and a summary of them. */
function heldKey<P>(state: KeyState<P>, now: number): HeldKey {
  const grant = (held: HeldRecord<P>): HeldGrant => ({
    token: held.token,
    remainingMs: Math.max(0, Math.ceil(held.deadline - now)),
    holder: held.holderSession?.label,
    slot: slotOf(held),
  });
  const set = state.holders;
  const holders = set === undefined ? [grant(state)] : [...set.values()].map(grant).sort(byToken);
  const newest = holders.at(-1)!;
  return {
    key: state.key,
    token: newest.token,
    remainingMs: Math.max(...holders.map((h) => h.remainingMs)),
    waiters: state.waiterCount,
    holder: holders.length === 1 ? newest.holder : undefined,
    mode: set === undefined ? "exclusive" : set.kind,
    limit: set?.kind === "permit" ? set.limit : undefined,
    holders,
  };
}

/** The `limit` keys with the most waiters, most first, out of the keys that have a queue. */
export function mostContended<P>(
  contended: Iterable<KeyState<P>>,
  limit: number,
): Array<{ key: string; waiters: number }> {
  const top: Array<{ key: string; waiters: number }> = [];
  if (limit <= 0) return top;
  for (const state of contended) {
    const waiters = state.waiterCount;
    if (top.length === limit && waiters <= top[limit - 1]!.waiters) continue;
    let at = top.length === limit ? limit - 1 : top.length;
    while (at > 0 && top[at - 1]!.waiters < waiters) at -= 1;
    top.splice(at, 0, { key: state.key, waiters });
    if (top.length > limit) top.pop();
  }
  return top;
}
