/**
 * Checks for programmer errors: values of the wrong kind where this package expects a store, a write,
 * a database handle or an options object. Without them, the first use of the bad value threw a plain
 * TypeError with no code, and in the stores only after the work had begun (a BEGIN, a GET).
 */
import { FenceError } from "./errors.js";

/** "undefined", "null", "a string", "an array"…: what a message says the caller passed. */
export function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return `${type === "object" ? "an" : "a"} ${type}`;
}

/** Whether `value` is an object with a function under every name in `methods`. */
export function hasMethods(value: unknown, ...methods: string[]): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  return methods.every((name) => typeof (value as Record<string, unknown>)[name] === "function");
}

/** FENCE_BAD_ARGUMENT unless `write` is a function. */
export function assertWrite(write: unknown): void {
  if (typeof write !== "function") {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `the write must be a function (tx) => …, got ${kindOf(write)}`,
    );
  }
}

/** FENCE_BAD_ARGUMENT unless `store` has fence() and current(). */
export function assertStore(store: unknown): void {
  if (!hasMethods(store, "fence", "current")) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `fence() needs a store with fence() and current() (memoryStore(), postgresStore(), redisStore()…), got ${kindOf(store)}`,
    );
  }
}

/** FENCE_BAD_ARGUMENT unless `store` has fenceRead() and currentRead() besides fence() and current(). */
export function assertReadStore(store: unknown): void {
  assertStore(store);
  if (!hasMethods(store, "fenceRead", "currentRead")) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      "fenceRead() needs a store that implements the read rule (fenceRead() and currentRead()): memoryStore(), postgresStore(), redisStore()",
    );
  }
}

/** FENCE_BAD_ARGUMENT unless `db` has query(): a pg Pool, Client or PoolClient. */
export function assertQueryable(db: unknown, caller: string): void {
  if (!hasMethods(db, "query")) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `${caller} needs a pg Pool, Client or PoolClient (anything with query()), got ${kindOf(db)}`,
    );
  }
}

/** FENCE_BAD_OPTIONS unless `options` is an object; `needs` says what it should hold. */
export function assertOptions(options: unknown, caller: string, needs: string): void {
  if (typeof options !== "object" || options === null) {
    throw new FenceError("FENCE_BAD_OPTIONS", `${caller} needs ${needs}, got ${kindOf(options)}`);
  }
}
