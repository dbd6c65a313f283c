// lockd live status page: draws the state lockd put in the page at once (the first paint shows
// it), then polls this node's admin API once a second. Plain browser modules, no dependencies, no
// requests to any other origin (the server's Content-Security-Policy forbids them). Every value
// from the server goes in with textContent, never as HTML: key names are client-chosen.

import { renderChart } from "./status-chart.js";
import { familyLink, renderFamilies } from "./status-families.js";
import {
  clockText,
  epochText,
  epochTitle,
  formatCount,
  formatMs,
  formatRate,
  useStoreEpochs,
} from "./status-format.js";
import { HoldersView } from "./status-holders.js";
import { renderSlots } from "./status-slots.js";

const POLL_MS = 1000;
/** Without an answer for this long, the page says so in red: the node may be down. */
const STALE_MS = 3000;
const TOKEN_KEY = "lockd-admin-token";

const $ = (id) => document.getElementById(id);
let lastAnswerAt = 0;
let everAnswered = false;

/**
 * The admin token, when lockd has one: asked for once, kept in sessionStorage (this tab only, gone
 * when it closes), sent as a Bearer header. Not a cookie, so no other site can make the browser
 * send it, and lockd keeps no session state.
 */
function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

class Unauthorized extends Error {}

async function getJson(path) {
  const response = await fetch(path, { headers: authHeaders(), cache: "no-store" });
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw Object.assign(new Error(body.message ?? `${path}: HTTP ${response.status}`), { code: body.code });
  }
  return response.json();
}

function showLogin(refused) {
  $("dashboard").hidden = true;
  $("login").hidden = false;
  $("login-error").hidden = !refused;
  $("freshness").textContent = "admin token needed";
  $("token").focus();
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  $("login").hidden = true;
  poll();
});

/** A node's state in words: DOWN wins over the role it last announced. */
function nodeState(peer) {
  if (!peer.self && !peer.live) return "down";
  if (peer.role === "active" || peer.role === "standby") return peer.role;
  return "unknown";
}

function badge(state) {
  const span = document.createElement("span");
  span.className = `badge ${state}`;
  span.textContent = state.toUpperCase();
  return span;
}

/** An address that never wraps (it scrolls or stacks instead). */
function address(text, note) {
  const span = document.createElement("span");
  const name = document.createElement("span");
  name.className = "address";
  name.textContent = text;
  span.append(name);
  if (note) {
    const muted = document.createElement("span");
    muted.className = "muted";
    muted.textContent = ` ${note}`;
    span.append(muted);
  }
  return span;
}

/** A cell; `label` names it where narrow screens stack a row's cells. */
function cell(row, content, className, label) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  if (className) td.className = className;
  if (label) td.dataset.label = label;
  return td;
}

function epochCell(row, epoch, note) {
  const td = cell(
    row,
    note && epoch !== "0" ? `${epochText(epoch)} ${note}` : epochText(epoch),
    "epoch",
    "Epoch",
  );
  td.title = epochTitle(epoch);
}

function lagText(peer, status) {
  if (peer.self) return "—";
  if (status.role !== "active") return "known on the active";
  const lag = peer.replicationLag;
  if (!lag) return peer.role === "standby" && peer.live ? "not streaming yet" : "—";
  if (lag.ops === 0) return "in sync";
  return `${lag.ops} ops behind, last ack ${formatMs(lag.sinceAckMs)} ago`;
}

function renderNodes(status) {
  const peers = status.cluster
    ? status.cluster.peers
    : [
        {
          address: status.node,
          self: true,
          role: status.role,
          epoch: status.epoch,
          live: true,
          follows: null,
        },
      ];
  const body = $("nodes").tBodies[0];
  body.replaceChildren();
  for (const peer of peers) {
    const state = nodeState(peer);
    const row = body.insertRow();
    row.dataset.node = peer.address;
    row.dataset.state = state;
    if (state === "down") row.className = "down";
    cell(row, address(peer.address, peer.self ? "(this node)" : ""), "key", "Node");
    cell(row, badge(state), "state", "State");
    epochCell(row, peer.epoch, state === "standby" ? "(its active's)" : "");
    cell(row, peer.follows ? address(peer.follows) : "—", "follows", "Follows");
    cell(
      row,
      peer.self ? "this node" : peer.linkConnected ? "connected" : "not connected",
      undefined,
      "Link",
    );
    cell(row, lagText(peer, status), undefined, "Replication lag");
  }
}

function renderSummary(status) {
  $("self-address").textContent = status.node;
  $("version").textContent = `v${status.version}`;
  const role = $("self-role");
  role.className = `badge ${status.role}`;
  role.textContent = status.role.toUpperCase();
  $("active").textContent = status.active ?? "none known";
  $("active").title = status.active ?? "";
  const epoch = $("epoch");
  const readable = document.createElement("span");
  readable.className = "epoch-readable";
  readable.textContent = epochText(status.epoch);
  const whose = document.createElement("span");
  whose.className = "sub muted";
  whose.textContent =
    status.role === "standby" && status.epochOf ? `the active's, ${status.epoch}` : status.epoch;
  epoch.replaceChildren(readable, whose);
  epoch.title = epochTitle(status.epoch);
  renderCoordinator(status.coordinator);
  $("keys-held").textContent = formatCount(status.keysHeld);
  $("waiters").textContent = formatCount(status.waiters);
  $("grants-rate").textContent = formatRate(status.grantsPerSecond);
  $("connections").textContent = formatCount(status.connections);
  $("uptime").textContent = formatMs(status.uptimeMs);
  holders.showCount(status.keysHeld);
}

/** With --coordinator: who holds the cluster's lease by the store, for how long, and the last epoch taken. */
function renderCoordinator(coordinator) {
  $("coordinator-card").hidden = !coordinator;
  if (!coordinator) return;
  const lease = document.createElement("span");
  lease.textContent =
    coordinator.holderError !== undefined
      ? "lease holder unknown"
      : coordinator.leaseHolder
        ? `lease: ${coordinator.leaseHolder.split(" ")[0]}, ${formatMs(coordinator.leaseRemainingMs ?? 0)} left`
        : "lease: nobody";
  const sub = document.createElement("span");
  sub.className = "sub muted";
  sub.textContent = `${coordinator.store}, cluster ${coordinator.cluster}, last epoch ${coordinator.lastEpoch ?? "none"}`;
  $("coordinator").replaceChildren(lease, sub);
  $("coordinator").title = coordinator.holderError ?? "";
}

function renderContended(status) {
  const body = $("contended").tBodies[0];
  body.replaceChildren();
  for (const { key, waiters, family } of status.mostContended) {
    const row = body.insertRow();
    cell(row, key, "key");
    cell(row, familyLink(family));
    cell(row, formatCount(waiters));
  }
  $("contended-none").hidden = status.mostContended.length > 0;
}

/** lockd's reasons name epochs as numbers ("above a rival active's 7412705793"): in words here. */
function epochsInWords(text) {
  return text.replace(/\b\d{9,13}\b/g, (epoch) => epochText(epoch));
}

function changeText(change) {
  if (change.kind === "role")
    return `${change.node} became ${change.role.toUpperCase()} (epoch ${epochText(change.epoch)}): ${epochsInWords(change.reason)}`;
  if (change.kind === "follow")
    return change.active
      ? `${change.active} is the ACTIVE now: this node follows it`
      : "this node follows no active: none is live";
  const role = change.role ? ` (last seen ${change.role})` : "";
  return change.live ? `${change.node} is LIVE${role}` : `${change.node} is DOWN: no heartbeat${role}`;
}

function renderChanges(status) {
  const list = $("changes");
  list.replaceChildren();
  for (const change of status.recentChanges) {
    const item = document.createElement("li");
    const time = document.createElement("time");
    time.dateTime = new Date(change.at).toISOString();
    time.textContent = clockText(change.at);
    item.append(time, changeText(change));
    list.append(item);
  }
  $("changes-none").hidden = status.recentChanges.length > 0;
}

function renderFreshness() {
  const freshness = $("freshness");
  const age = Date.now() - lastAnswerAt;
  const stale = !everAnswered || age > STALE_MS;
  freshness.classList.toggle("stale", stale);
  freshness.dataset.stale = String(stale);
  if (!everAnswered) freshness.textContent = "NO ANSWER from this node yet";
  else if (stale)
    freshness.textContent = `NO ANSWER from this node for ${formatMs(age)}: it may be down (last data below)`;
  else freshness.textContent = `live · updated ${new Date(lastAnswerAt).toLocaleTimeString("en-GB")}`;
}

function render(status, history) {
  lastAnswerAt = Date.now();
  everAnswered = true;
  $("login").hidden = true;
  $("dashboard").hidden = false;
  useStoreEpochs(Boolean(status.coordinator));
  renderSummary(status);
  renderNodes(status);
  // A lockd older than slot maps sends no `slots`: no panel, as without --slot-map.
  renderSlots(status.slots ?? null, cell);
  renderContended(status);
  renderFamilies(status.families ?? null, cell);
  renderChanges(status);
  renderChart($("chart"), history);
}

const holders = new HoldersView(getJson, cell);

let timer;
async function poll() {
  clearTimeout(timer);
  try {
    const [status, history] = await Promise.all([getJson("/status"), getJson("/history"), holders.refresh()]);
    render(status, history);
  } catch (error) {
    if (error instanceof Unauthorized) {
      const hadToken = sessionStorage.getItem(TOKEN_KEY) !== null;
      sessionStorage.removeItem(TOKEN_KEY);
      showLogin(hadToken);
      return;
    }
  }
  renderFreshness();
  timer = setTimeout(poll, POLL_MS);
}

/**
 * The state lockd put in the page: drawn before the first paint (this script blocks rendering).
 * With an admin token it holds only the node and its role: the page shows them, and asks for the
 * token unless this tab has it.
 */
function renderInitialState() {
  const block = $("initial-state");
  const state = block ? JSON.parse(block.textContent) : {};
  if (state.status) {
    render(state.status, state.history);
    holders.render(state.locks);
    renderFreshness();
    return;
  }
  if (state.node) {
    $("self-address").textContent = state.node;
    const role = $("self-role");
    role.className = `badge ${state.role}`;
    role.textContent = state.role.toUpperCase();
  }
  if (state.auth !== "required") return;
  // With the token at hand, the dashboard's frame shows while the first poll is under way.
  if (sessionStorage.getItem(TOKEN_KEY) === null) showLogin(false);
  else $("dashboard").hidden = false;
}

renderInitialState();
poll();
