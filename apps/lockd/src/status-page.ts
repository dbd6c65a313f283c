import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

/** The page's files, served from memory: read once at start, so a page load touches no disk. */
const FILES = [
  { path: "/", file: "index.html", type: "text/html; charset=utf-8" },
  { path: "/status.js", file: "status.js", type: "text/javascript; charset=utf-8" },
  { path: "/status.css", file: "status.css", type: "text/css; charset=utf-8" },
] as const;

/** The page's paths: static and public (the data it shows asks for the admin token). */
export const STATUS_PAGE_PATHS: ReadonlySet<string> = new Set(FILES.map((entry) => entry.path));

/**
 * Only this origin, for everything: the page makes no request anywhere else (no CDN, fonts or
 * analytics), and a script injected through a key name could not send data away either.
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

/** The live status page at `/` (apps/lockd/static): plain HTML, one script, one stylesheet. */
export function registerStatusPage(app: FastifyInstance): void {
  const folder = new URL("../static/", import.meta.url);
  for (const { path, file, type } of FILES) {
    const body = readFileSync(new URL(file, folder));
    app.get(path, async (_request, reply) =>
      reply
        .header("content-type", type)
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("cache-control", "no-cache")
        .send(body),
    );
  }
}
