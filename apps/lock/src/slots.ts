import { setTimeout as sleep } from "node:timers/promises";
import { type AdminAnswer, adminGet, adminPost, refusedBy } from "./admin-http.js";
import type { SlotsCommand } from "./args.js";
import { formatDuration } from "./duration.js";
import { CliError } from "./errors.js";
import type { Settings } from "./settings.js";
import { formatTable } from "./table.js";

/** How often `lock slots move` looks at the map while it waits for the commit. */
const POLL_MS = 200;

/** A range of the map as lockd's `GET /slots` lists it. */
interface SlotRange {
  readonly from: number;
  readonly to: number;
  readonly cluster: string;
  readonly movingTo: string | null;
}

/** lockd's `GET /slots` body. */
interface SlotsStatus {
  readonly cluster: string;
  /** On the active of a move's source: what is left before it commits. */
  readonly drain?: { readonly heldKeys: number } | null;
  readonly map: {
    readonly version: string;
    readonly clusters: Record<string, string[]>;
    readonly ranges: readonly SlotRange[];
  } | null;
}

export interface SlotsIo {
  readonly stdout: (text: string) => void;
}

/**
 * `lock slots`: the slot map as a node has it (any node of any cluster: they follow one document in
 * the coordinator). `lock slots move`: begins a move there, then follows the map until the source
 * cluster committed it (docs/operations.md, "Moving slots").
 */
export async function slots(command: SlotsCommand, settings: Settings, io: SlotsIo): Promise<number> {
  if (command.move === undefined) {
    const { address, status } = await readSlots(settings, 0);
    io.stdout(command.json ? `${JSON.stringify(status, null, 2)}\n` : `${formatMap(status, address)}\n`);
    return 0;
  }
  return moveSlots(command.move, command.json, settings, io);
}

async function moveSlots(
  move: NonNullable<SlotsCommand["move"]>,
  json: boolean,
  settings: Settings,
  io: SlotsIo,
): Promise<number> {
  const started = performance.now();
  const address = settings.admin[0]!;
  const answer = await adminPost(
    address,
    "/slots/moves",
    { from: move.from, to: move.to, target: move.target },
    request(settings),
  );
  const begun = ensureOk(answer, address, 202) as { version: string; source: string };
  const span = move.from === move.to ? `slot ${move.from}` : `slots ${move.from}-${move.to}`;
  if (!json)
    io.stdout(`moving ${span} from ${begun.source} to ${move.target} (map version ${begun.version})\n`);
  if (move.waitMs === "none") {
    if (json) io.stdout(`${JSON.stringify({ begun }, null, 2)}\n`);
    return 0;
  }
  const deadline = move.waitMs === undefined ? Number.POSITIVE_INFINITY : started + move.waitMs;
  let lastHeld: number | undefined;
  for (let attempt = 0; ; attempt += 1) {
    const seen = await readSlots(settings, attempt).catch(() => undefined);
    const map = seen?.status.map;
    if (map && committed(map.ranges, move)) {
      const tookMs = Math.round(performance.now() - started);
      if (json)
        io.stdout(`${JSON.stringify({ begun, committed: { version: map.version, tookMs } }, null, 2)}\n`);
      else
        io.stdout(
          `committed: ${span} are ${move.target}'s (map version ${map.version}) after ${formatDuration(tookMs)}\n`,
        );
      return 0;
    }
    if (map) ensureStillMoving(map.ranges, move, span);
    const held = seen?.status.drain?.heldKeys;
    if (!json && held !== undefined && held > 0 && held !== lastHeld) {
      io.stdout(
        `waiting for ${held} held key${held === 1 ? "" : "s"} there (released, or their leases run out)\n`,
      );
      lastHeld = held;
    }
    if (performance.now() + POLL_MS > deadline)
      throw new CliError(
        "WAIT_TIMEOUT",
        `--wait ran out before the move of ${span} committed; it goes on (the source drains its holders): lock slots shows it`,
      );
    await sleep(POLL_MS);
  }
}

/** Every slot of the move is its target's, with no move under way. */
function committed(
  ranges: readonly SlotRange[],
  move: { from: number; to: number; target: string },
): boolean {
  return overlapping(ranges, move).every((range) => range.cluster === move.target && range.movingTo === null);
}

/** The map changed under the move (an operator, another command): waiting would never end. */
function ensureStillMoving(
  ranges: readonly SlotRange[],
  move: { from: number; to: number; target: string },
  span: string,
) {
  const other = overlapping(ranges, move).find(
    (range) => range.movingTo !== move.target && !(range.cluster === move.target && range.movingTo === null),
  );
  if (other !== undefined)
    throw new CliError(
      "REFUSED",
      `the slot map changed while ${span} moved: ${other.from}-${other.to} is now ${other.cluster}'s${other.movingTo ? `, moving to ${other.movingTo}` : ""}`,
    );
}

function overlapping(ranges: readonly SlotRange[], move: { from: number; to: number }): SlotRange[] {
  return ranges.filter((range) => range.to >= move.from && range.from <= move.to);
}

/** GET /slots from an admin address (the `attempt`-th in turn, so a node that is down is skipped next time). */
async function readSlots(
  settings: Settings,
  attempt: number,
): Promise<{ address: string; status: SlotsStatus }> {
  const address = settings.admin[attempt % settings.admin.length]!;
  const answer = await adminGet(address, "/slots", request(settings));
  return { address, status: ensureOk(answer, address, 200) as SlotsStatus };
}

function request(settings: Settings) {
  return { token: settings.adminToken, timeoutMs: settings.timeoutMs, tls: settings.tls };
}

/** The body of an answer with status `expected`; lockd's error (its code and message) otherwise. */
function ensureOk(answer: AdminAnswer, address: string, expected: number): unknown {
  if (answer.status !== expected) throw refusedBy(address, answer);
  return answer.body;
}

/** The map as two tables: ranges (with moves in progress) and each cluster's addresses. */
function formatMap(status: SlotsStatus, address: string): string {
  const map = status.map;
  if (map === null) return `${address} (cluster ${status.cluster}) has not read the slot map yet`;
  const ranges = map.ranges.map((range) => [
    range.from === range.to ? String(range.from) : `${range.from}-${range.to}`,
    range.cluster,
    range.movingTo ?? "-",
  ]);
  const clusters = Object.entries(map.clusters).map(([name, addresses]) => [name, addresses.join(",")]);
  return [
    `slot map version ${map.version}, as ${address} (cluster ${status.cluster}) has it`,
    "",
    formatTable(["SLOTS", "CLUSTER", "MOVING TO"], ranges),
    "",
    formatTable(["CLUSTER", "ADDRESSES"], clusters),
  ].join("\n");
}
