import { createRequire } from "node:module";
import type { Attributes, Span, Tracer } from "@opentelemetry/api";

/**
 * OpenTelemetry spans for acquires, holds and releases, through `@opentelemetry/api` when the
 * application has it (an optional peer dependency): without it, or without a tracer provider
 * registered (an SDK), every function here is a no-op that costs a check or two.
 *
 * The module is looked up once, with `require` from `node:module`'s createRequire rather than an
 * `import`: a static import would fail to load the client where it is missing, and a bundler would
 * try to resolve `import("@opentelemetry/api")` at build time. A require by a computed function is
 * left to run time, and a bundle (or an app) without the module simply traces nothing.
 *
 * Spans: `lock.acquire` covers the wait, from the call to its outcome (attributes `lock.key`,
 * `lock.mode`, `lock.wait_ms`, `lock.outcome`, `lock.token` when granted; redirects and retries are
 * events on it); `lock.hold` runs from the grant to the release or the loss; `lock.release` covers
 * the release request, a child of the hold.
 */
type Api = typeof import("@opentelemetry/api");

const TRACER_NAME = "@lock/client";

let api: Api | null | undefined;

function loadApi(): Api | null {
  if (api !== undefined) return api;
  try {
    api = createRequire(import.meta.url)("@opentelemetry/api") as Api;
  } catch {
    // Absent (or a bundle without `import.meta.url`): tracing is off for the process.
    api = null;
  }
  return api;
}

function tracer(): Tracer | undefined {
  const otel = loadApi();
  if (otel === null) return undefined;
  const provider = otel.trace.getTracerProvider();
  // Until an SDK registers a provider the global one is a proxy without a delegate, whose tracer
  // makes non-recording spans: skipping them saves about 0.5 µs per acquire and release (measured
  // on Node 22), which an app that only has the API as some library's dependency would pay for
  // nothing. Asked on every call: an SDK may register after the client is loaded.
  return provider instanceof otel.ProxyTracerProvider
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/** How an acquire call ended, as its span's `lock.outcome` says. */
export type AcquireOutcome = "granted" | "busy" | "timeout" | "aborted" | "error";

/** The spans of one acquire call, and then of its hold. No OpenTelemetry type in its API. */
export class AcquireTrace {
  readonly #span: Span;
  readonly #key: string;
  #hold: Span | undefined;

  private constructor(span: Span, key: string) {
    this.#span = span;
    this.#key = key;
  }

  /** Starts `lock.acquire` (a child of the caller's active span); undefined when tracing is off. */
  static start(key: string, mode: string, waitMs: number | undefined): AcquireTrace | undefined {
    const spans = tracer();
    if (spans === undefined) return undefined;
    const attributes: Attributes = { "lock.key": key, "lock.mode": mode };
    if (waitMs !== undefined) attributes["lock.wait_ms"] = waitMs;
    const span = spans.startSpan("lock.acquire", { kind: api!.SpanKind.CLIENT, attributes });
    return new AcquireTrace(span, key);
  }

  /** An event on the acquire span: `redirect` (to another node or cluster), `retry`. */
  event(name: "redirect" | "retry", attributes: Record<string, string | number>): void {
    this.#span.addEvent(name, attributes);
  }

  /** Ends the acquire span; a grant starts the hold span. */
  settled(token: bigint | undefined, error: Error | undefined): void {
    const outcome: AcquireOutcome =
      error === undefined
        ? token === undefined
          ? "busy"
          : "granted"
        : error.name === "LockTimeoutError"
          ? "timeout"
          : error.name === "AbortError"
            ? "aborted"
            : "error";
    this.#span.setAttribute("lock.outcome", outcome);
    if (token !== undefined) {
      this.#span.setAttribute("lock.token", token.toString());
      this.#hold = tracer()!.startSpan("lock.hold", {
        kind: api!.SpanKind.INTERNAL,
        attributes: { "lock.key": this.#key, "lock.token": token.toString() },
        links: [{ context: this.#span.spanContext() }],
      });
    }
    if (outcome === "timeout" || outcome === "error") endWithError(this.#span, error!);
    else this.#span.end();
  }

  /** Ties the hold span (if the call was granted) to the lock it became: its release or loss ends it. */
  heldBy(lock: object): void {
    if (this.#hold !== undefined) holds.set(lock, this.#hold);
  }
}

/** Hold spans by lock: weak, so a lock dropped without a release leaves nothing behind. */
const holds = new WeakMap<object, Span>();

/**
 * The lock's release starts: the hold span ends, and `lock.release` begins as its child. Returns
 * `done` wrapped to end that span too (or `done` itself when the lock has no hold span).
 */
export function traceRelease<D extends (error: Error | undefined, released: boolean) => void>(
  lock: object,
  done: D,
): D {
  const hold = holds.get(lock);
  if (hold === undefined) return done;
  holds.delete(lock);
  hold.setAttribute("lock.outcome", "released");
  hold.end();
  const otel = api!;
  const parent = otel.trace.setSpan(otel.context.active(), hold);
  const span = tracer()!.startSpan("lock.release", { kind: otel.SpanKind.CLIENT }, parent);
  return ((error: Error | undefined, released: boolean) => {
    span.setAttribute("lock.released", released);
    if (error !== undefined) endWithError(span, error);
    else span.end();
    done(error, released);
  }) as D;
}

/** The lock was lost (a refused or missed extension): its hold span ends with the error. */
export function traceLost(lock: object, error: Error): void {
  const hold = holds.get(lock);
  if (hold === undefined) return;
  holds.delete(lock);
  hold.setAttribute("lock.outcome", "lost");
  endWithError(hold, error);
}

function endWithError(span: Span, error: Error): void {
  span.recordException(error);
  span.setStatus({ code: api!.SpanStatusCode.ERROR, message: error.message });
  span.end();
}
