// The status page's chart: grants/s (this node's own, and those it replicated from the active while
// a standby) and handoffs/s over the last 5 minutes, drawn on a canvas. No chart library: this is
// three lines on integer ticks, and the page loads nothing it does not serve itself.

import { formatRate } from "./status-format.js";

const SPAN_MS = 5 * 60_000;
const SERIES = [
  { read: (point) => point.grantsPerSecond, colour: "#4fc3f7", id: "grants-now" },
  { read: (point) => point.replicatedGrantsPerSecond ?? 0, colour: "#b39ddb", id: "replicated-now" },
  { read: (point) => point.handoffsPerSecond, colour: "#ffb74d", id: "handoffs-now" },
];

/**
 * Integer ticks from 0 (rates are whole events per second): a step of 1, 2 or 5 × 10^n, at least
 * 1, so about five intervals cover `peak`.
 */
export function integerTicks(peak) {
  const rough = Math.max(1, peak) / 5;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(
    1,
    [1, 2, 5, 10].map((factor) => factor * power).find((size) => size >= rough),
  );
  const top = Math.max(step, Math.ceil(peak / step) * step);
  const ticks = [];
  for (let value = 0; value <= top; value += step) ticks.push(value);
  return ticks;
}

/** Draws `history.points` on `canvas`; its data attributes say what it drew (peak, ticks, points). */
export function renderChart(canvas, history) {
  const points = history.points;
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);

  const peak = Math.max(0, ...points.flatMap((point) => SERIES.map((series) => series.read(point))));
  const ticks = integerTicks(peak);
  const top = ticks[ticks.length - 1];
  const left = 48;
  const right = width - 8;
  const bottom = height - 22;
  const now = points.length ? points[points.length - 1].at : Date.now();
  const x = (at) => left + ((right - left) * (at - (now - SPAN_MS))) / SPAN_MS;
  const y = (value) => bottom - ((bottom - 8) * value) / top;

  drawAxes(g, { ticks, left, right, width, height, x, y, now });
  for (const series of SERIES) drawLine(g, points, series, x, y);

  canvas.dataset.peak = String(peak);
  canvas.dataset.ticks = ticks.join(",");
  canvas.dataset.points = String(points.length);
  const last = points[points.length - 1];
  for (const series of SERIES) {
    document.getElementById(series.id).textContent = last ? `now ${formatRate(series.read(last))}` : "";
  }
}

function drawAxes(g, { ticks, left, right, width, height, x, y, now }) {
  g.strokeStyle = "#2e3640";
  g.fillStyle = "#9aa4b1";
  g.font = "12px system-ui, sans-serif";
  g.lineWidth = 1;
  for (const value of ticks) {
    g.beginPath();
    g.moveTo(left, y(value));
    g.lineTo(right, y(value));
    g.stroke();
    g.fillText(formatRate(value), 4, y(value) + 4);
  }
  // Every minute on a wide chart; every other one ("now" always) where the labels would touch.
  const every = width < 520 ? 2 : 1;
  for (let minutes = 5; minutes >= 0; minutes--) {
    if (minutes % every !== 0) continue;
    const label = minutes === 0 ? "now" : `-${minutes} min`;
    const labelWidth = g.measureText(label).width;
    const at = Math.min(Math.max(x(now - minutes * 60_000) - labelWidth / 2, left - 16), width - labelWidth);
    g.fillText(label, at, height - 4);
  }
}

function drawLine(g, points, series, x, y) {
  g.strokeStyle = series.colour;
  g.lineWidth = 2;
  g.beginPath();
  let drawing = false;
  for (const point of points) {
    const value = series.read(point);
    // A series is drawn where it has something to say: no flat line under the others.
    if (value === 0 && !drawing) continue;
    if (!drawing) g.moveTo(x(point.at), y(value));
    else g.lineTo(x(point.at), y(value));
    drawing = value !== 0 || drawing;
  }
  g.stroke();
}
