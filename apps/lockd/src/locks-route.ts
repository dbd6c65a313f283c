import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { LockServer } from "@lock/server";
import type { FastifyInstance } from "fastify";
import { adminError } from "./admin-errors.js";

export const DEFAULT_LOCKS_LIMIT = 100;
export const MAX_LOCKS_LIMIT = 1000;
/** Keys added to the ordered index per event-loop turn while it is first built (a few ms a step). */
const INDEX_BUILD_STEP = 2_000;

/** `GET /locks`'s body. */
export interface LocksPage {
  readonly locks: Array<{
    key: string;
    token: string;
    leaseRemainingMs: number;
    waiters: number;
    /** The holding client connection's remote address; null for a replicated holder, or several. */
    holder: string | null;
    /** `exclusive`, `shared` or `permit` (docs/protocol.md, "Lock modes"). */
    mode: "exclusive" | "shared" | "permit";
    /** A semaphore's number of permits; null for a lock. */
    limit: number | null;
    /** Every holder of the key, oldest grant first (`slot`: a permit's, else null). */
    holders: Array<{ token: string; leaseRemainingMs: number; holder: string | null; slot: number | null }>;
  }>;
  /** Pass it back as `cursor` for the next page; null on the last page. */
  readonly nextCursor: string | null;
}

/**
 * `GET /locks?prefix=&limit=&cursor=`: held keys in UTF-8 byte order, a page at a time. The engine
 * keeps an ordered index of held keys from the moment the admin server starts (built in steps if
 * keys are already held, so a million keys never block the event loop for long), so every page,
 * the first one included, costs O(log n + limit). The cursor is the last key of the page, opaque to
 * clients (base64url, versioned by its first letter).
 */
export function registerLocksRoute(app: FastifyInstance, server: LockServer): void {
  // Kept from the start, not built on the first listing: that would make the first page on a
  // million held keys wait for the build (a fifth of a second).
  void prepareIndex(server);
  app.get("/locks", async (request, reply): Promise<LocksPage | undefined> => {
    const query = request.query as Record<string, unknown>;
    const prefix = query.prefix ?? "";
    if (typeof prefix !== "string") return adminError(reply, 400, "BAD_PREFIX", "prefix must be given once");
    const limit = parseLimit(query.limit);
    if (limit === undefined)
      return adminError(reply, 400, "BAD_LIMIT", `limit must be an integer from 1 to ${MAX_LOCKS_LIMIT}`);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    if (after === null) return adminError(reply, 400, "BAD_CURSOR", "cursor is not one this server returned");

    return listLocks(server, { prefix, after, limit });
  });
}

/** One page of held keys (the status page's first paint takes one too). */
export async function listLocks(
  server: LockServer,
  query: { prefix: string; after: string | undefined; limit: number },
): Promise<LocksPage> {
  await prepareIndex(server);
  const page = server.node.listHeld(query);
  const last = page.keys.at(-1);
  return {
    locks: page.keys.map((held) => ({
      key: held.key,
      token: held.token.toString(),
      leaseRemainingMs: held.remainingMs,
      waiters: held.waiters,
      holder: held.holder ?? null,
      mode: held.mode,
      limit: held.limit ?? null,
      holders: held.holders.map((grant) => ({
        token: grant.token.toString(),
        leaseRemainingMs: grant.remainingMs,
        holder: grant.holder ?? null,
        slot: grant.slot ?? null,
      })),
    })),
    nextCursor: page.more && last ? encodeCursor(last.key) : null,
  };
}

/** Builds the engine's ordered index of held keys in steps, one per event-loop turn, until complete. */
async function prepareIndex(server: LockServer): Promise<void> {
  // Re-read the engine each turn: a role change may replace the table meanwhile.
  while (!server.node.prepareListing(INDEX_BUILD_STEP)) await yieldToEventLoop();
}

function parseLimit(raw: unknown): number | undefined {
  if (raw === undefined) return DEFAULT_LOCKS_LIMIT;
  if (typeof raw !== "string" || !/^[0-9]{1,7}$/.test(raw)) return undefined;
  const limit = Number(raw);
  return limit >= 1 && limit <= MAX_LOCKS_LIMIT ? limit : undefined;
}

export function encodeCursor(key: string): string {
  return `k${Buffer.from(key, "utf8").toString("base64url")}`;
}

/** The key a cursor stands for; null if it is not one `encodeCursor` could have made. */
export function decodeCursor(raw: unknown): string | null {
  if (typeof raw !== "string" || !/^k[A-Za-z0-9_-]+$/.test(raw)) return null;
  const bytes = Buffer.from(raw.slice(1), "base64url");
  const key = bytes.toString("utf8");
  // Canonical only: invalid UTF-8 or a non-canonical encoding was not made here.
  return key.length > 0 && encodeCursor(key) === raw ? key : null;
}
