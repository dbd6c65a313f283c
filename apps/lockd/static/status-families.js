// The key families panel: contention by key family (lockd's --key-families): waiting and held now,
// and the wait and hold p99 since start, estimated from /metrics' histograms. Each most contended
// key shows its family, linked to the family's row here.

import { formatCount } from "./status-format.js";

const $ = (id) => document.getElementById(id);

function anchorOf(family) {
  return `family-${encodeURIComponent(family)}`;
}

/** The family of a contended key, as a link to its row (a dash without family metrics). */
export function familyLink(family) {
  if (family === null || family === undefined) return "–";
  const link = document.createElement("a");
  link.href = `#${anchorOf(family)}`;
  link.textContent = family;
  return link;
}

/** Sub-millisecond waits are the common case of an uncontended lock: they keep their decimals. */
export function latencyText(ms) {
  if (ms === null) return "–";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `families` is null from a lockd without family metrics (--key-family-limit 0, or older). */
export function renderFamilies(families, cell) {
  $("families-panel").hidden = families === null || families === undefined;
  if ($("families-panel").hidden) return;
  const body = $("families").tBodies[0];
  body.replaceChildren();
  for (const family of families) {
    const row = body.insertRow();
    row.id = anchorOf(family.family);
    cell(row, family.family, "key", "Family");
    cell(row, formatCount(family.waiting), undefined, "Waiting");
    cell(row, formatCount(family.held), undefined, "Held");
    cell(row, latencyText(family.waitP99Ms), undefined, "Wait p99");
    cell(row, latencyText(family.holdP99Ms), undefined, "Hold p99");
  }
  $("families-none").hidden = families.length > 0;
}
