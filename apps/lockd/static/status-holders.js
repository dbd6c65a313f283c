// The status page's "Locks held": who holds which key, a page at a time, searched by key prefix
// through the admin API's GET /locks (ordered, paged, O(log n + page) on the server).

import { formatCount, formatMs, tokenText } from "./status-format.js";

const $ = (id) => document.getElementById(id);
/** Held keys shown at a time (lockd's first paint lists as many). */
const PAGE_SIZE = 20;
/** Typing pauses this long before the search runs. */
const SEARCH_PAUSE_MS = 150;

/**
 * The holders view. `getJson(path)` asks the admin API (with the token); `cell(row, content,
 * className)` adds a cell as the rest of the page does. Keeps its own prefix and page: each poll
 * refreshes the page shown.
 */
export class HoldersView {
  #prefix = "";
  /** The page shown: null for the first, else the cursor /locks gave for it. */
  #cursor = null;
  #nextCursor = null;
  #searchTimer;
  #generation = 0;

  constructor(getJson, cell) {
    this.getJson = getJson;
    this.cell = cell;
    $("holders-search").addEventListener("input", () => {
      clearTimeout(this.#searchTimer);
      this.#searchTimer = setTimeout(() => this.#search($("holders-search").value), SEARCH_PAUSE_MS);
    });
    $("holders-form").addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(this.#searchTimer);
      this.#search($("holders-search").value);
    });
    $("holders-next").addEventListener("click", () => {
      this.#cursor = this.#nextCursor;
      this.refresh();
    });
    $("holders-first").addEventListener("click", () => {
      this.#cursor = null;
      this.refresh();
    });
  }

  /** Asks for the page shown now; a newer request's answer wins over a slower older one. */
  async refresh() {
    const generation = ++this.#generation;
    const query = new URLSearchParams({ prefix: this.#prefix, limit: String(PAGE_SIZE) });
    if (this.#cursor !== null) query.set("cursor", this.#cursor);
    try {
      const page = await this.getJson(`/locks?${query}`);
      if (generation === this.#generation) this.render(page);
    } catch (error) {
      if (generation !== this.#generation) return;
      // A page whose cursor went stale (a restart) starts over; other failures are the poll's to report.
      if (error.code === "BAD_CURSOR") this.#cursor = null;
      else if (error.code) this.#showError(error.message);
      else throw error;
    }
  }

  render(page) {
    $("holders-error").hidden = true;
    const body = $("holders").tBodies[0];
    body.replaceChildren();
    for (const lock of page.locks) this.#row(body, lock);
    this.#nextCursor = page.nextCursor;
    $("holders-next").hidden = page.nextCursor === null;
    $("holders-first").hidden = this.#cursor === null;
    const none = $("holders-none");
    none.hidden = page.locks.length > 0;
    none.textContent = this.#prefix === "" ? "No key is held." : `No held key starts with “${this.#prefix}”.`;
  }

  /** The "of N keys" next to the title, from /status. */
  showCount(keysHeld) {
    $("holders-count").textContent = `${formatCount(keysHeld)} keys held`;
  }

  #row(body, lock) {
    const row = body.insertRow();
    row.dataset.key = lock.key;
    this.cell(row, lock.key, "key", "Key");
    this.cell(row, modeText(lock), undefined, "Mode");
    const token = document.createElement("span");
    const raw = document.createElement("span");
    raw.className = "raw";
    raw.textContent = lock.token;
    const parts = document.createElement("span");
    parts.className = "sub muted";
    parts.textContent = tokenText(lock.token);
    token.append(raw, parts);
    this.cell(row, token, "token", "Token");
    this.cell(row, formatMs(lock.leaseRemainingMs), undefined, "Lease left");
    this.cell(row, formatCount(lock.waiters), undefined, "Waiters");
    const holder = document.createElement("span");
    // A holder replicated from an active: this node knows the lock, not the client's connection.
    const several = (lock.holders?.length ?? 1) > 1;
    holder.className = lock.holder === null ? "muted" : "address";
    holder.textContent = several
      ? lock.holders.map((grant) => grant.holder ?? "replicated").join(", ")
      : (lock.holder ?? "replicated");
    this.cell(row, holder, undefined, "Holder");
  }

  #search(prefix) {
    this.#prefix = prefix;
    this.#cursor = null;
    this.refresh();
  }

  #showError(message) {
    $("holders-error").hidden = false;
    $("holders-error").textContent = message;
  }
}

/**
 * How a key is held (lockd's /locks `mode`): `exclusive`, `shared ×N` (readers), or a semaphore's
 * permits taken of its limit with their slots (`permits 2/5 · slots 0, 3`). A lockd without lock
 * modes sends no mode: exclusive.
 */
function modeText(lock) {
  const holders = lock.holders ?? [];
  if (lock.mode === "shared") return `shared ×${holders.length}`;
  if (lock.mode === "permit") {
    const slots = holders.map((grant) => grant.slot).sort((a, b) => a - b);
    return `permits ${holders.length}/${lock.limit} · slot${slots.length === 1 ? "" : "s"} ${slots.join(", ")}`;
  }
  return "exclusive";
}
