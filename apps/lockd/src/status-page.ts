import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyReply } from "fastify";

/** The page's scripts and stylesheet, served from memory: read once at start, no disk per load. */
const ASSETS = [
  { path: "/status.js", file: "status.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-format.js", file: "status-format.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-chart.js", file: "status-chart.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-families.js", file: "status-families.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-holders.js", file: "status-holders.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-slots.js", file: "status-slots.js", type: "text/javascript; charset=utf-8" },
  { path: "/status-slots-format.js", file: "status-slots-format.js", type: "text/javascript; charset=utf-8" },
  { path: "/status.css", file: "status.css", type: "text/css; charset=utf-8" },
] as const;

/** The page's paths: public (the data they show asks for the admin token, if there is one). */
export const STATUS_PAGE_PATHS: ReadonlySet<string> = new Set(["/", ...ASSETS.map((entry) => entry.path)]);

/** Where index.html takes the node's state, so the first paint shows it (no fetch needed first). */
const STATE_MARKER = "<!--initial-state-->";

/**
 * Only this origin, for everything: the page makes no request anywhere else (no CDN, fonts or
 * analytics), and a script injected through a key name could not send data away either. The
 * initial state is a JSON data block, which is never run, so no inline script is allowed.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * What the page shows before its first poll, put in the page itself. With an admin token it holds
 * only what `/readyz` tells anyone (the page asks for the token to see more).
 */
export type InitialState = () => Promise<unknown>;

/**
 * The live status page at `/` (apps/lockd/static): HTML, a few small ES modules, one stylesheet.
 * `/` carries the node's state as a JSON data block, which the render-blocking script draws before
 * the first paint; it then polls the admin API once a second.
 */
export function registerStatusPage(app: FastifyInstance, initialState: InitialState): void {
  const folder = new URL("../static/", import.meta.url);
  for (const { path, file, type } of ASSETS) {
    const body = readFileSync(new URL(file, folder));
    app.get(path, async (_request, reply) => pageHeaders(reply, type).send(body));
  }
  const template = readFileSync(new URL("index.html", folder), "utf8");
  const [head, tail] = template.split(STATE_MARKER) as [string, string | undefined];
  if (tail === undefined) throw new Error(`static/index.html lacks ${STATE_MARKER}`);
  app.get("/", async (_request, reply) => {
    const state = stateBlock(await initialState());
    return pageHeaders(reply, "text/html; charset=utf-8").send(`${head}${state}${tail}`);
  });
}

/**
 * A JSON data block that no text inside can end early: every `<` is escaped (key names are
 * chosen by clients, and `</script>` in one would otherwise close the block).
 */
export function stateBlock(state: unknown): string {
  const json = JSON.stringify(state).replace(/</g, "\\u003c");
  return `<script type="application/json" id="initial-state">${json}</script>`;
}

function pageHeaders(reply: FastifyReply, type: string): FastifyReply {
  return reply
    .header("content-type", type)
    .header("content-security-policy", CONTENT_SECURITY_POLICY)
    .header("x-content-type-options", "nosniff")
    .header("cache-control", "no-cache");
}
