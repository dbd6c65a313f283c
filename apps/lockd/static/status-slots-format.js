// The slot map in words and numbers for the status page: no DOM here, only what /status's `slots`
// says, turned into a row per cluster, the moves in progress and the bar's segments.

/** Every key hashes to one of these (docs/protocol.md, "Key slots"). */
export const KEY_SLOTS = 16384;
/** Ranges listed in a cluster's row; a map of many small ranges says how many more it has. */
const RANGES_LISTED = 12;

/** "5061" for one slot, "0-8191" for several. */
export function rangeText(range) {
  return range.from === range.to ? String(range.from) : `${range.from}-${range.to}`;
}

export function slotCount(range) {
  return range.to - range.from + 1;
}

/** A share of the 16384 slots: "50%", "49.99%", "0.01%" (two decimals at most, never 0 for a slot). */
export function shareText(slots) {
  if (slots === 0) return "0%";
  const percent = Math.max(0.01, Number(((slots / KEY_SLOTS) * 100).toFixed(2)));
  return `${percent}%`;
}

/** "5061: east → west": a move in progress, from its source (which still serves it) to its target. */
export function moveText(range) {
  return `${rangeText(range)}: ${range.cluster} → ${range.movingTo}`;
}

/** A cluster's ranges as one line, a moving range marked with its target; long lists are cut. */
export function rangesText(ranges) {
  const listed = ranges
    .slice(0, RANGES_LISTED)
    .map((range) => (range.movingTo ? `${rangeText(range)} (→ ${range.movingTo})` : rangeText(range)));
  const more = ranges.length - listed.length;
  return more > 0 ? `${listed.join(", ")} and ${more} more` : listed.join(", ");
}

/**
 * One row per cluster of the map, in the map's order: its name, addresses, the slots it serves
 * (a moving range is still its source's until the move commits) and their share, its ranges, and
 * whether it is this node's cluster. `colour` numbers the cluster for the page's palette.
 */
export function clusterRows(map, selfCluster) {
  return Object.entries(map.clusters).map(([name, addresses], colour) => {
    const ranges = map.ranges.filter((range) => range.cluster === name);
    const slots = ranges.reduce((sum, range) => sum + slotCount(range), 0);
    return {
      name,
      addresses,
      slots,
      share: shareText(slots),
      ranges: rangesText(ranges),
      self: name === selfCluster,
      colour,
    };
  });
}

/** The ranges being moved, in slot order. */
export function movesInProgress(map) {
  return map.ranges.filter((range) => range.movingTo);
}

/**
 * The bar's segments: where each range starts and how wide it is, in percent of the 16384 slots,
 * with its cluster's colour number and whether it is moving.
 */
export function barSegments(map) {
  const colours = new Map(Object.keys(map.clusters).map((name, colour) => [name, colour]));
  return map.ranges.map((range) => ({
    left: (range.from / KEY_SLOTS) * 100,
    width: (slotCount(range) / KEY_SLOTS) * 100,
    colour: colours.get(range.cluster) ?? 0,
    moving: Boolean(range.movingTo),
  }));
}

/** The bar in words, for screen readers: "east 0-8191; west 8192-16383; 5061 moving east → west". */
export function barText(map) {
  return map.ranges
    .map((range) =>
      range.movingTo
        ? `${rangeText(range)} moving ${range.cluster} → ${range.movingTo}`
        : `${range.cluster} ${rangeText(range)}`,
    )
    .join("; ");
}
