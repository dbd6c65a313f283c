import { adminGet, refusedBy } from "./admin-http.js";
import type { LocksCommand } from "./args.js";
import { formatDuration } from "./duration.js";
import { CliError } from "./errors.js";
import type { Settings } from "./settings.js";
import { formatTable } from "./table.js";

/** One held key, as lockd's `GET /locks` lists it. */
export interface HeldLock {
  readonly key: string;
  readonly token: string;
  readonly leaseRemainingMs: number;
  readonly waiters: number;
  /** The holder's remote address, or null when it holds the key through no connection (replicated, reconnecting). */
  readonly holder: string | null;
  /** Absent from a lockd without lock modes: the key is then held exclusively. */
  readonly mode?: "exclusive" | "shared" | "permit";
  readonly limit?: number | null;
  /** Every holder, oldest grant first (a shared key's readers, a semaphore's permits). */
  readonly holders?: ReadonlyArray<{
    readonly token: string;
    readonly leaseRemainingMs: number;
    readonly holder: string | null;
    readonly slot: number | null;
  }>;
}

interface LocksPage {
  readonly locks: readonly HeldLock[];
  readonly nextCursor: string | null;
}

/** The admin endpoint's largest page. */
const MAX_PAGE = 1_000;

export interface LocksIo {
  readonly stdout: (text: string) => void;
}

/**
 * `lock locks`: the held keys, from the active's admin server (standbys know the keys but not the
 * holders' connections). Follows `nextCursor` until `--limit` rows are shown or the list ends.
 */
export async function listLocks(command: LocksCommand, settings: Settings, io: LocksIo): Promise<number> {
  const address = await findActiveAdmin(settings);
  const locks: HeldLock[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: String(Math.min(MAX_PAGE, command.limit - locks.length)) });
    if (command.prefix !== "") query.set("prefix", command.prefix);
    if (cursor !== null) query.set("cursor", cursor);
    const page = await fetchPage(address, `/locks?${query}`, settings);
    locks.push(...page.locks.slice(0, command.limit - locks.length));
    cursor = page.nextCursor;
  } while (cursor !== null && locks.length < command.limit);
  if (command.json) {
    io.stdout(`${JSON.stringify({ locks, nextCursor: cursor }, null, 2)}\n`);
    return 0;
  }
  const rows = locks.flatMap(holderRows);
  const more = cursor !== null ? `\n(more keys held: raise --limit, or narrow --prefix)` : "";
  const header = ["KEY", "MODE", "TOKEN", "LEASE LEFT", "WAITERS", "HOLDER"];
  io.stdout(`${formatTable(header, rows)}${more}\n`);
  return 0;
}

/**
 * The admin address of the active: the first one whose /status says `active`; the first that
 * answers at all when none does (a single node, or a cluster in the middle of a failover).
 */
async function findActiveAdmin(settings: Settings): Promise<string> {
  if (settings.admin.length === 1) return settings.admin[0]!;
  const answers = await Promise.all(
    settings.admin.map((address) =>
      adminGet(address, "/status", {
        token: settings.adminToken,
        timeoutMs: settings.timeoutMs,
        tls: settings.tls,
      }).then(
        (answer) => ({ address, role: (answer.body as { role?: unknown }).role }),
        (error: CliError) => ({ address, error }),
      ),
    ),
  );
  const answered = answers.filter((answer) => !("error" in answer));
  const active = answered.find((answer) => "role" in answer && answer.role === "active") ?? answered[0];
  if (active !== undefined) return active.address;
  const failure =
    answers.find((answer) => "error" in answer && answer.error.code === "AUTH_FAILED") ?? answers[0]!;
  throw (failure as { error: CliError }).error;
}

async function fetchPage(address: string, path: string, settings: Settings): Promise<LocksPage> {
  const answer = await adminGet(address, path, {
    token: settings.adminToken,
    timeoutMs: settings.timeoutMs,
    tls: settings.tls,
  });
  if (answer.status !== 200) throw refusedBy(address, answer);
  const body = answer.body as Partial<LocksPage>;
  if (!Array.isArray(body.locks) || (body.nextCursor !== null && typeof body.nextCursor !== "string")) {
    throw new CliError("REFUSED", `admin server ${address} answered /locks with an unexpected shape`);
  }
  return { locks: body.locks, nextCursor: body.nextCursor };
}

/** A row per holder: an exclusive key has one, a shared key one per reader, a semaphore one per permit. */
function holderRows(lock: HeldLock): string[][] {
  const holders = lock.holders ?? [lock];
  return holders.map((grant) => [
    lock.key,
    modeText(lock, "slot" in grant ? grant.slot : null),
    grant.token,
    formatDuration(grant.leaseRemainingMs),
    String(lock.waiters),
    grant.holder ?? "-",
  ]);
}

/** `exclusive`, `shared`, or a permit as `permit <slot>/<limit>`. */
function modeText(lock: HeldLock, slot: number | null): string {
  if (lock.mode !== "permit") return lock.mode ?? "exclusive";
  return `permit ${slot ?? "?"}/${lock.limit ?? "?"}`;
}
