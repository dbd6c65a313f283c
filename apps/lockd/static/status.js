// lockd live status page: polls this node's admin API once a second and draws what it says.
// Plain browser JavaScript, no dependencies, no requests to any other origin (the server's
// Content-Security-Policy forbids them). Every value from the server goes in with textContent,
// never as HTML: key names are client-chosen.

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
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
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

function cell(row, content, className) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  if (className) td.className = className;
  return td;
}

function lagText(peer, status) {
  if (peer.self) return "—";
  if (status.role !== "active") return "known on the active";
  const lag = peer.replicationLag;
  if (!lag) return peer.role === "standby" && peer.live ? "not streaming yet" : "—";
  if (lag.ops === 0) return "in sync";
  return `${lag.ops} ops behind, last ack ${formatMs(lag.sinceAckMs)} ago`;
}

function linkText(peer) {
  if (peer.self) return "this node";
  return peer.linkConnected ? "connected" : "not connected";
}

function renderNodes(status) {
  const peers = status.cluster
    ? status.cluster.peers
    : [{ address: status.node, self: true, role: status.role, epoch: status.epoch, live: true }];
  const body = $("nodes").tBodies[0];
  body.replaceChildren();
  for (const peer of peers) {
    const state = nodeState(peer);
    const row = body.insertRow();
    row.dataset.node = peer.address;
    row.dataset.state = state;
    if (state === "down") row.className = "down";
    const name = document.createElement("span");
    name.textContent = peer.address;
    const where = document.createElement("span");
    where.className = "muted";
    where.textContent = peer.self ? " (this node)" : "";
    const nameCell = document.createElement("span");
    nameCell.append(name, where);
    cell(row, nameCell, "key");
    cell(row, badge(state), "state");
    // A node that was never active has taken no epoch: "0" would read like a value.
    cell(row, peer.epoch === "0" ? "none yet" : peer.epoch);
    cell(row, linkText(peer));
    cell(row, lagText(peer, status));
  }
}

function renderSummary(status) {
  $("self-address").textContent = status.node;
  const role = $("self-role");
  role.className = `badge ${status.role}`;
  role.textContent = status.role.toUpperCase();
  $("active").textContent = status.active ?? "none known";
  $("epoch").textContent = status.epoch;
  $("keys-held").textContent = status.keysHeld.toLocaleString("en");
  $("waiters").textContent = status.waiters.toLocaleString("en");
  $("grants-rate").textContent = status.grantsPerSecond.toLocaleString("en");
  $("connections").textContent = status.connections.toLocaleString("en");
  $("uptime").textContent = formatMs(status.uptimeMs);
}

function renderContended(status) {
  const body = $("contended").tBodies[0];
  body.replaceChildren();
  for (const { key, waiters } of status.mostContended) {
    const row = body.insertRow();
    cell(row, key, "key");
    cell(row, waiters.toLocaleString("en"));
  }
  $("contended-none").hidden = status.mostContended.length > 0;
}

function changeText(change) {
  if (change.kind === "role")
    return `${change.node} became ${change.role.toUpperCase()} (epoch ${change.epoch}): ${change.reason}`;
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
    time.textContent = new Date(change.at).toLocaleTimeString("en-GB");
    item.append(time, changeText(change));
    list.append(item);
  }
  $("changes-none").hidden = status.recentChanges.length > 0;
}

/** Two lines over the last minutes, y from 0 to a round maximum, labelled in the canvas. */
function renderChart(history) {
  const canvas = $("chart");
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const points = history.points;
  const left = 56;
  const bottom = height - 22;
  const top = 8;
  const spanMs = 5 * 60_000;
  const now = points.length ? points[points.length - 1].at : Date.now();
  const max = niceMax(Math.max(1, ...points.map((p) => Math.max(p.grantsPerSecond, p.handoffsPerSecond))));
  const x = (at) => left + ((width - left - 8) * (at - (now - spanMs))) / spanMs;
  const y = (value) => bottom - ((bottom - top) * value) / max;

  g.strokeStyle = "#2e3640";
  g.fillStyle = "#9aa4b1";
  g.font = "12px system-ui, sans-serif";
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const value = (max * i) / 4;
    g.beginPath();
    g.moveTo(left, y(value));
    g.lineTo(width - 8, y(value));
    g.stroke();
    g.fillText(formatRate(value), 4, y(value) + 4);
  }
  for (let minutes = 5; minutes >= 0; minutes--) {
    const at = now - minutes * 60_000;
    g.fillText(minutes === 0 ? "now" : `-${minutes} min`, x(at) - (minutes === 0 ? 24 : 16), height - 4);
  }
  const line = (read, colour) => {
    g.strokeStyle = colour;
    g.lineWidth = 2;
    g.beginPath();
    points.forEach((point, i) => {
      if (i === 0) g.moveTo(x(point.at), y(read(point)));
      else g.lineTo(x(point.at), y(read(point)));
    });
    g.stroke();
  };
  line((p) => p.grantsPerSecond, "#4fc3f7");
  line((p) => p.handoffsPerSecond, "#ffb74d");
  const last = points[points.length - 1];
  $("grants-now").textContent = last ? `now ${formatRate(last.grantsPerSecond)}` : "";
  $("handoffs-now").textContent = last ? `now ${formatRate(last.handoffsPerSecond)}` : "";
}

function niceMax(value) {
  const step = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 5, 10]) if (value <= step * factor) return step * factor;
  return step * 10;
}

function formatRate(value) {
  if (value >= 10_000) return `${Math.round(value / 1000)}k`;
  if (value >= 1000) return `${(value / 1000).toFixed(1)}k`;
  return String(Math.round(value * 10) / 10);
}

function formatMs(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h ${minutes % 60} min` : `${Math.floor(hours / 24)} d ${hours % 24} h`;
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

let timer;
async function poll() {
  clearTimeout(timer);
  try {
    const [status, history] = await Promise.all([getJson("/status"), getJson("/history")]);
    lastAnswerAt = Date.now();
    everAnswered = true;
    $("login").hidden = true;
    $("dashboard").hidden = false;
    renderSummary(status);
    renderNodes(status);
    renderContended(status);
    renderChanges(status);
    renderChart(history);
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

poll();
