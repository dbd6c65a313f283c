import { FenceError } from "./errors.js";

/**
 * Resource names end up as Postgres text, Redis key suffixes and HTTP error bodies. Postgres text
 * cannot hold NUL, and a bound keeps a bug (say, a whole request body as the name) from becoming a
 * huge key.
 */
export const MAX_RESOURCE_LENGTH = 512;

export function assertResource(resource: unknown): asserts resource is string {
  if (typeof resource !== "string" || resource.length === 0) {
    throw new FenceError("FENCE_BAD_RESOURCE", "the resource name must be a non-empty string");
  }
  if (resource.length > MAX_RESOURCE_LENGTH) {
    throw new FenceError(
      "FENCE_BAD_RESOURCE",
      `the resource name is ${resource.length} characters long; at most ${MAX_RESOURCE_LENGTH} are allowed`,
    );
  }
  if (resource.includes("\u0000")) {
    throw new FenceError("FENCE_BAD_RESOURCE", "the resource name must not contain a NUL character");
  }
}
