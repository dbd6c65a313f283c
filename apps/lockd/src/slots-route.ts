import { KEY_SLOTS, SlotMap, SlotMapError } from "@lock/protocol";
import { type CoordinationStore, type LockServer, SLOT_MAP_DOCUMENT } from "@lock/server";
import type { FastifyInstance, FastifyReply } from "fastify";
import { adminError } from "./admin-errors.js";

/** Compare-and-set attempts of a move's begin before it answers CONFLICT (another writer keeps winning). */
const BEGIN_ATTEMPTS = 3;

/** `POST /slots/moves`'s body. */
interface MoveBody {
  readonly from: number;
  readonly to: number;
  readonly target: string;
}

/**
 * With `--slot-map`: this node's cluster, and the map in force here (null until read from the store):
 * its version, every cluster's addresses and the ranges, moving ones with their target.
 */
export function slotsStatus(server: LockServer) {
  const gate = server.slots;
  if (!gate) return null;
  const map = gate.map;
  const drain = server.slotMoves?.draining();
  return {
    cluster: gate.cluster,
    // On the active of a move's source: what is left before it commits.
    drain: drain
      ? {
          ranges: drain.ranges.map(({ from, to, movingTo }) => ({ from, to, movingTo })),
          scanning: drain.scanning,
          heldKeys: drain.heldKeys,
          committing: drain.committing,
        }
      : null,
    map: map
      ? {
          version: map.version.toString(),
          clusters: Object.fromEntries(map.clusters),
          ranges: map.ranges.map((range) => ({ ...range, movingTo: range.movingTo ?? null })),
        }
      : null,
  };
}

/**
 * `GET /slots` (the map as this node has it) and `POST /slots/moves` (begin a move: docs/operations.md,
 * "Moving slots"). A move is begun by a compare-and-set of the store's map, marking the range as
 * moving to `target`; the source cluster's active drains it and commits the move itself. Any node of
 * any cluster may be asked: the store, not the node, holds the map.
 */
export function registerSlotsRoutes(
  app: FastifyInstance,
  server: LockServer,
  store: CoordinationStore | undefined,
): void {
  app.get("/slots", async (_request, reply) => {
    const status = slotsStatus(server);
    if (status === null) return adminError(reply, 404, "NO_SLOT_MAP", "this node runs without --slot-map");
    return status;
  });
  app.post("/slots/moves", async (request, reply) => {
    if (!server.slots || !store)
      return adminError(reply, 404, "NO_SLOT_MAP", "this node runs without --slot-map (and --coordinator)");
    const body = moveBody(request.body);
    if (typeof body === "string") return adminError(reply, 400, "INVALID_MOVE", body);
    try {
      return await beginMove(store, body, reply);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return adminError(reply, 503, "COORDINATOR_UNAVAILABLE", `the coordinator did not answer: ${message}`);
    }
  });
}

async function beginMove(store: CoordinationStore, move: MoveBody, reply: FastifyReply) {
  for (let attempt = 0; attempt < BEGIN_ATTEMPTS; attempt += 1) {
    const document = await store.readDocument(SLOT_MAP_DOCUMENT);
    if (document === undefined)
      return adminError(
        reply,
        404,
        "NO_SLOT_MAP",
        "the coordinator holds no slot map (lockd --slot-map seeds it)",
      );
    let next: SlotMap;
    let source: string;
    try {
      const map = SlotMap.fromDocument(document.version, document.value);
      source = map.rangeOf(move.from).cluster;
      next = map.withMoveBegun(move.from, move.to, move.target, document.version + 1n);
    } catch (error) {
      if (!(error instanceof SlotMapError)) throw error;
      return adminError(reply, 400, "INVALID_MOVE", error.message);
    }
    const version = await store.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), document.version);
    if (version !== undefined)
      return reply
        .code(202)
        .send({ version: version.toString(), from: move.from, to: move.to, source, target: move.target });
  }
  return adminError(
    reply,
    409,
    "CONFLICT",
    "the slot map kept changing while the move was written; try again",
  );
}

/** The body's move, or why it is not one. */
function moveBody(body: unknown): MoveBody | string {
  const { from, to, target } = (typeof body === "object" && body !== null ? body : {}) as Record<
    string,
    unknown
  >;
  const isSlot = (value: unknown): value is number =>
    Number.isInteger(value) && (value as number) >= 0 && (value as number) < KEY_SLOTS;
  if (!isSlot(from) || !isSlot(to))
    return `"from" and "to" must be slots from 0 to ${KEY_SLOTS - 1}, got ${JSON.stringify({ from, to })}`;
  if (from > to) return `"from" (${from}) must not be above "to" (${to})`;
  if (typeof target !== "string" || target === "") return `"target" must name a cluster of the map`;
  return { from, to, target };
}
