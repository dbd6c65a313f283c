// Numbers in words for the status page: epochs and tokens by their parts, durations, rates.

/** Epoch rounds count seconds from here (docs/protocol.md, "Fencing tokens"). */
const ROUND_ORIGIN_MS = Date.UTC(2026, 0, 1);
const SEQUENCE_BITS = 24n;
const NODE_ID_BITS = 8n;

/**
 * With a coordinator, epochs are numbers from the store's counter, not a node and a round: they are
 * shown as they are. Set by the page from each /status (`coordinator` present or not).
 */
let storeEpochs = false;

export function useStoreEpochs(on) {
  storeEpochs = on;
}

/** `epoch` (a decimal string) as its parts: the node that took it and when (its round). */
export function epochParts(epoch) {
  const value = BigInt(epoch);
  return {
    nodeId: Number(value & ((1n << NODE_ID_BITS) - 1n)),
    takenAt: ROUND_ORIGIN_MS + Number(value >> NODE_ID_BITS) * 1000,
  };
}

/** "node 1 · 14:02:11" (and the day when it is not today), "store epoch 7" with a coordinator; "none yet" for 0. */
export function epochText(epoch) {
  if (epoch === "0" || epoch === undefined || epoch === null) return "none yet";
  if (storeEpochs) return `store epoch ${epoch}`;
  const { nodeId, takenAt } = epochParts(epoch);
  return `node ${nodeId} · ${clockText(takenAt)}`;
}

/** The raw epoch and how it reads, for a title attribute. */
export function epochTitle(epoch) {
  if (epoch === "0") return "no epoch: this node follows no active yet";
  if (storeEpochs) return `epoch ${epoch}, taken from the coordinator's counter`;
  const { nodeId, takenAt } = epochParts(epoch);
  const round = BigInt(epoch) >> NODE_ID_BITS;
  return `epoch ${epoch} = round ${round} (${new Date(takenAt).toISOString()}) × 256 + node id ${nodeId}`;
}

/** A token's grant number within its epoch, and the epoch in words: "grant #1,234 · node 0 · 14:02:11". */
export function tokenText(token) {
  const value = BigInt(token);
  const sequence = value & ((1n << SEQUENCE_BITS) - 1n);
  const epoch = (value >> SEQUENCE_BITS).toString();
  return `grant #${sequence.toLocaleString("en")} · ${epochText(epoch)}`;
}

/** A wall-clock time: "14:02:11", with the day when it is not today. */
export function clockText(ms) {
  const date = new Date(ms);
  const time = date.toLocaleTimeString("en-GB");
  if (date.toDateString() === new Date().toDateString()) return time;
  return `${time} (${date.toLocaleDateString("en-GB", { day: "numeric", month: "short" })})`;
}

export function formatRate(value) {
  if (value >= 10_000) return `${Math.round(value / 1000)}k`;
  if (value >= 1000) return `${Math.round(value / 100) / 10}k`;
  return String(Math.round(value * 10) / 10);
}

export function formatMs(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ${minutes % 60} min` : `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export function formatCount(value) {
  return value.toLocaleString("en");
}
