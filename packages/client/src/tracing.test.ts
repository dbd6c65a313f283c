import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { LockdProcess } from "@lock/testkit";
import {
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  SpanStatusCode,
  type TimeInput,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LockTimeoutError } from "./errors.js";
import { LockClient } from "./index.js";
import { AcquireTrace, traceLost } from "./tracing.js";

/** A finished (or open) span as the recorder keeps it. */
interface Recorded {
  readonly name: string;
  readonly context: SpanContext;
  readonly parentSpanId: string | undefined;
  readonly attributes: Record<string, unknown>;
  readonly events: Array<{ name: string; attributes: Record<string, unknown> }>;
  status: { code: SpanStatusCode; message?: string | undefined };
  ended: boolean;
}

/** The smallest span that records what it is told (the API's Span interface, in memory). */
class RecordingSpan implements Span {
  constructor(readonly recorded: Recorded) {}
  spanContext(): SpanContext {
    return this.recorded.context;
  }
  setAttribute(key: string, value: unknown): this {
    this.recorded.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Record<string, unknown>): this {
    Object.assign(this.recorded.attributes, attributes);
    return this;
  }
  addEvent(name: string, attributes?: unknown): this {
    this.recorded.events.push({ name, attributes: (attributes ?? {}) as Record<string, unknown> });
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: { code: SpanStatusCode; message?: string }): this {
    this.recorded.status = status;
    return this;
  }
  updateName(): this {
    return this;
  }
  end(_endTime?: TimeInput): void {
    this.recorded.ended = true;
  }
  isRecording(): boolean {
    return !this.recorded.ended;
  }
  recordException(exception: unknown): void {
    this.addEvent("exception", { message: (exception as Error).message });
  }
}

class RecordingTracer implements Tracer {
  readonly spans: Recorded[] = [];
  #next = 1;

  startSpan(name: string, options?: SpanOptions, context?: Context): Span {
    const parent = context === undefined ? undefined : trace.getSpanContext(context);
    const recorded: Recorded = {
      name,
      context: {
        traceId: parent?.traceId ?? "0af7651916cd43dd8448eb211c80319c",
        spanId: (this.#next++).toString(16).padStart(16, "0"),
        traceFlags: 1,
      },
      parentSpanId: parent?.spanId,
      attributes: { ...(options?.attributes ?? {}) },
      events: [],
      status: { code: SpanStatusCode.UNSET },
      ended: false,
    };
    this.spans.push(recorded);
    return new RecordingSpan(recorded);
  }

  startActiveSpan(): never {
    throw new Error("not used by @lock/client");
  }

  take(): Recorded[] {
    return this.spans.splice(0);
  }
}

const tracer = new RecordingTracer();
const provider: TracerProvider = { getTracer: () => tracer };

let lockd: LockdProcess;
let client: LockClient;

beforeAll(async () => {
  expect(trace.setGlobalTracerProvider(provider)).toBe(true);
  lockd = await LockdProcess.start();
  client = new LockClient({ servers: [lockd.address] });
});

afterAll(async () => {
  await client?.close();
  await lockd?.dispose();
  trace.disable();
});

afterEach(() => {
  tracer.take();
});

describe("OpenTelemetry spans (@opentelemetry/api present)", () => {
  it("starts no span while no SDK has registered a tracer provider (the API's global proxy has no delegate)", () => {
    trace.disable();
    try {
      expect(AcquireTrace.start("orders:0", "exclusive", undefined)).toBeUndefined();
    } finally {
      expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    }
    const registered = AcquireTrace.start("orders:0", "exclusive", undefined);
    expect(registered).toBeDefined();
    registered!.settled(undefined, undefined);
    expect(tracer.take().map((span) => span.name)).toEqual(["lock.acquire"]);
  });

  it("traces an acquire, the hold it became and its release, the release a child of the hold", async () => {
    const lock = await client.acquire("orders:1", { leaseMs: 10_000, waitMs: 5_000 });
    await lock.release();
    const [acquire, hold, release] = tracer.take();
    expect(acquire).toMatchObject({
      name: "lock.acquire",
      ended: true,
      attributes: {
        "lock.key": "orders:1",
        "lock.mode": "exclusive",
        "lock.wait_ms": 5_000,
        "lock.outcome": "granted",
        "lock.token": lock.token.toString(),
      },
    });
    expect(hold).toMatchObject({
      name: "lock.hold",
      ended: true,
      attributes: { "lock.key": "orders:1", "lock.token": lock.token.toString(), "lock.outcome": "released" },
    });
    expect(release).toMatchObject({
      name: "lock.release",
      ended: true,
      attributes: { "lock.released": true },
    });
    expect(release!.parentSpanId).toBe(hold!.context.spanId);
  });

  it("ends an acquire whose wait ran out with outcome timeout and an error status", async () => {
    const held = await client.acquire("orders:2", { leaseMs: 10_000 });
    tracer.take();
    await expect(client.acquire("orders:2", { leaseMs: 10_000, waitMs: 50 })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    const [acquire] = tracer.take();
    expect(acquire).toMatchObject({
      name: "lock.acquire",
      ended: true,
      attributes: { "lock.outcome": "timeout" },
    });
    expect(acquire!.status.code).toBe(SpanStatusCode.ERROR);
    expect(acquire!.events.map((event) => event.name)).toEqual(["exception"]);
    await held.release();
  });

  it("ends a try-acquire of a held key with outcome busy and no hold", async () => {
    const held = await client.acquire("orders:3", { leaseMs: 10_000 });
    tracer.take();
    expect(await client.tryAcquire("orders:3", { leaseMs: 10_000 })).toBeNull();
    const spans = tracer.take();
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ name: "lock.acquire", attributes: { "lock.outcome": "busy" } });
    expect(spans[0]!.attributes["lock.wait_ms"]).toBeUndefined();
    await held.release();
  });

  it("records redirects and retries as events, and ends a lost lock's hold with its error", () => {
    const acquireTrace = AcquireTrace.start("k", "shared", 0)!;
    acquireTrace.event("redirect", { "lock.redirect.to": "10.0.0.2:7420" });
    acquireTrace.event("retry", { "lock.attempt": 2, "lock.retry.reason": "connection reset" });
    acquireTrace.settled(9n, undefined);
    const lock = {};
    acquireTrace.heldBy(lock);
    traceLost(lock, new Error("the lease ran out"));
    const [acquire, hold] = tracer.take();
    expect(acquire!.events).toEqual([
      { name: "redirect", attributes: { "lock.redirect.to": "10.0.0.2:7420" } },
      { name: "retry", attributes: { "lock.attempt": 2, "lock.retry.reason": "connection reset" } },
    ]);
    expect(hold).toMatchObject({ name: "lock.hold", ended: true, attributes: { "lock.outcome": "lost" } });
    expect(hold!.status).toEqual({ code: SpanStatusCode.ERROR, message: "the lease ran out" });
  });
});

/**
 * A process where `@opentelemetry/api` cannot be resolved (a resolve hook refuses it, as for an app
 * that never installed it): the built client loads and locks as usual.
 */
const WITHOUT_OTEL = `
import { registerHooks, createRequire } from "node:module";
registerHooks({
  resolve(specifier, context, next) {
    if (specifier === "@opentelemetry/api") {
      throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: "MODULE_NOT_FOUND" });
    }
    return next(specifier, context);
  },
});
const clientUrl = process.argv[1];
let found = true;
try { createRequire(clientUrl)("@opentelemetry/api"); } catch { found = false; }
const { LockClient } = await import(clientUrl);
const client = new LockClient({ servers: [process.argv[2]] });
const lock = await client.acquire("absent:1", { leaseMs: 5000, waitMs: 5000 });
await lock.release();
await client.close();
console.log(found ? "api found" : "api absent, lock " + lock.token);
`;

describe("without @opentelemetry/api", () => {
  it("loads and locks in a process where the module cannot be resolved", async () => {
    const clientMain = new URL("../dist/index.js", import.meta.url).href;
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--input-type=module", "-e", WITHOUT_OTEL, clientMain, lockd.address],
        { cwd: fileURLToPath(new URL(".", import.meta.url)) },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
      );
    });
    expect(stdout).toMatch(/^api absent, lock \d+$/m);
  });
});
