// The status page's "Slots" panel (lockd --slot-map): the clusters that share the key space, the
// slots each serves, and the moves in progress, redrawn from every /status. No panel without a map.

import { formatCount } from "./status-format.js";
import { barSegments, barText, clusterRows, movesInProgress, moveText } from "./status-slots-format.js";

const $ = (id) => document.getElementById(id);
/** The palette's size in status.css (`.cluster-0` …): more clusters reuse its colours. */
const PALETTE = 6;

/**
 * Draws `slots` (/status's field: null without --slot-map, else this node's cluster and the map it
 * follows, null until read). `cell(row, content, className, label)` adds a table cell as the rest of
 * the page does.
 */
export function renderSlots(slots, cell) {
  $("slots-panel").hidden = !slots;
  if (!slots) return;
  const map = slots.map;
  $("slots-cluster").textContent = slots.cluster;
  $("slots-version").textContent = map ? `· map version ${map.version}` : "";
  $("slots-unread").hidden = map !== null;
  $("slots-map").hidden = map === null;
  if (!map) return;
  renderBar(map);
  renderClusters(map, slots.cluster, cell);
  renderMoves(map);
}

function renderBar(map) {
  const bar = $("slots-bar");
  bar.setAttribute("aria-label", `slots 0-16383 by cluster: ${barText(map)}`);
  bar.replaceChildren(
    ...barSegments(map).map((segment) => {
      const part = document.createElement("span");
      part.className = `segment cluster-${segment.colour % PALETTE}${segment.moving ? " moving" : ""}`;
      // The CSSOM, not a style attribute: the page's Content-Security-Policy allows no inline style.
      part.style.left = `${segment.left}%`;
      part.style.width = `${segment.width}%`;
      return part;
    }),
  );
}

function renderClusters(map, selfCluster, cell) {
  const body = $("slot-clusters").tBodies[0];
  body.replaceChildren();
  for (const cluster of clusterRows(map, selfCluster)) {
    const row = body.insertRow();
    row.dataset.cluster = cluster.name;
    row.dataset.slots = String(cluster.slots);
    if (cluster.self) row.className = "self";
    const name = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = `swatch cluster-${cluster.colour % PALETTE}`;
    name.append(swatch, ` ${cluster.name}`);
    if (cluster.self) {
      const note = document.createElement("span");
      note.className = "muted";
      note.textContent = " (this node's cluster)";
      name.append(note);
    }
    cell(row, name, "name", "Cluster");
    cell(row, addresses(cluster.addresses), undefined, "Addresses");
    cell(row, formatCount(cluster.slots), "slots", "Slots");
    cell(row, cluster.share, "share", "Share");
    cell(row, cluster.ranges, "ranges", "Ranges");
  }
}

/** Addresses side by side, each on one line (a list of several wraps between them, never inside). */
function addresses(list) {
  const span = document.createElement("span");
  list.forEach((text, index) => {
    const one = document.createElement("span");
    one.className = "address";
    one.textContent = text;
    span.append(...(index > 0 ? [", ", one] : [one]));
  });
  return span;
}

function renderMoves(map) {
  const moves = movesInProgress(map);
  $("slot-moves").replaceChildren(
    ...moves.map((range) => {
      const item = document.createElement("li");
      item.dataset.move = `${range.from}-${range.to}`;
      item.textContent = moveText(range);
      return item;
    }),
  );
  $("slot-moves-none").hidden = moves.length > 0;
}
