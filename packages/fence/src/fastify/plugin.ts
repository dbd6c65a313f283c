import { STATUS_CODES } from "node:http";
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { FenceError, StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { FENCING_TOKEN_HEADER, parseFencingHeader } from "../headers.js";
import { assertResource } from "../resource.js";
import type { FenceStore, FenceWrite } from "../store.js";

export interface FencePluginOptions {
  /** Where accepted tokens are recorded (any adapter: memory, Postgres, Redis). */
  store: FenceStore<unknown>;
  /** The request header that carries the token. Default "fencing-token" (matched case-insensitively). */
  header?: string;
}

/** Route opt-in: `{ config: { fence: { resource: (req) => `orders:${req.params.id}` } } }`. */
export interface FenceRouteConfig {
  /** The fenced resource, fixed or derived from the request. */
  resource: string | ((request: FastifyRequest) => string);
  /**
   * true (default): the preHandler checks and advances the token, so stale requests are refused before
   * the handler runs. The handler's own writes are NOT atomic with that check: a newer holder can write
   * between the preHandler and the handler. Writes that must be safe go through `request.fenced()`.
   * false: the preHandler only parses the token; `request.fenced()` does the one atomic check.
   */
  precheck?: boolean;
}

/**
 * Fastify's usual error body (`statusCode`, `code`, `error`, `message`) plus, for a stale token, the
 * tokens: what an app's own error handler can answer with, `reply.code(e.statusCode).send(fenceErrorBody(e))`.
 */
export interface FenceErrorBody {
  statusCode: number;
  code: string;
  /** The status's reason phrase, e.g. "Conflict", as Fastify's default handler sets it. */
  error: string;
  message: string;
  resource?: string;
  /** Bigints as decimal strings: JSON has no u64. */
  presentedToken?: string;
  currentToken?: string;
}

declare module "fastify" {
  interface FastifyContextConfig {
    fence?: FenceRouteConfig;
  }
  interface FastifyRequest {
    /** The accepted token on a fenced route; null elsewhere. */
    fencingToken: bigint | null;
    /** The fenced resource on a fenced route; null elsewhere. */
    fenceResource: string | null;
    /**
     * Runs `write` through the plugin's store with this request's resource and token: check, advance
     * and write atomically (see fence()). Annotate `tx` with your store's transaction type, e.g.
     * `request.fenced((tx: PostgresFenceTx) => tx.query(...))`. A stale token rejects with
     * StaleTokenError (statusCode 409). Only on fenced routes.
     */
    fenced<Tx = unknown, T = unknown>(write: FenceWrite<Tx, T>): Promise<Awaited<T>>;
  }
}

export function fenceErrorBody(error: FenceError): FenceErrorBody {
  const body: FenceErrorBody = {
    statusCode: error.statusCode,
    code: error.code,
    error: STATUS_CODES[error.statusCode] ?? "Error",
    message: error.message,
  };
  if (error instanceof StaleTokenError) {
    body.resource = error.resource;
    body.presentedToken = error.presentedToken.toString();
    body.currentToken = error.currentToken.toString();
  }
  return body;
}

/**
 * Decorates requests (once per encapsulation context: registering it again where it is already visible
 * throws FENCE_PLUGIN_REGISTERED) and adds a preHandler to every route that sets `config.fence`, from
 * routes registered after the plugin in the same context or its children.
 */
async function fencePlugin(fastify: FastifyInstance, options: FencePluginOptions): Promise<void> {
  const { store } = options;
  if (typeof store?.fence !== "function" || typeof store.current !== "function") {
    throw new FenceError("FENCE_BAD_OPTIONS", "@lock/fence plugin: `store` must be a FenceStore");
  }
  const header = (options.header ?? FENCING_TOKEN_HEADER).toLowerCase();
  if (fastify.hasRequestDecorator("fencingToken")) {
    throw new FenceError(
      "FENCE_PLUGIN_REGISTERED",
      "@lock/fence plugin is already registered in this context or a parent; register it once per " +
        "context (sibling contexts may each register their own)",
    );
  }
  fastify.decorateRequest("fencingToken", null);
  fastify.decorateRequest("fenceResource", null);
  fastify.decorateRequest("fenced", function fenced<Tx, T>(this: FastifyRequest, write: FenceWrite<Tx, T>) {
    if (this.fencingToken === null || this.fenceResource === null) {
      return Promise.reject(
        new FenceError("FENCE_BAD_OPTIONS", "request.fenced() is only available on routes with config.fence"),
      );
    }
    return fence(store as FenceStore<Tx>, this.fenceResource, this.fencingToken, write);
  });

  fastify.addHook("onRoute", (route) => {
    const config = route.config?.fence;
    if (config === undefined) return;
    const resourceType = typeof config?.resource;
    if (resourceType !== "string" && resourceType !== "function") {
      throw new FenceError(
        "FENCE_BAD_OPTIONS",
        `route ${route.url}: config.fence.resource must be a string or function`,
      );
    }
    const guard = fenceGuard(store, header, config);
    // First among the route's preHandlers: nothing else should spend work on a refused request.
    const existing = route.preHandler ?? [];
    route.preHandler = [guard, ...(Array.isArray(existing) ? existing : [existing])];
  });
}

function fenceGuard(
  store: FenceStore<unknown>,
  header: string,
  config: FenceRouteConfig,
): preHandlerAsyncHookHandler {
  const precheck = config.precheck ?? true;
  // Refusals are thrown, never sent: like any Fastify error they reach the app's error handler (and
  // onError hooks), and without one Fastify's default handler answers with its usual body.
  return async function fenceGuard(request: FastifyRequest) {
    const token = parseFencingHeader(request.headers[header], header);
    const resource = typeof config.resource === "function" ? config.resource(request) : config.resource;
    assertResource(resource); // a bad name is a server bug: 500, also when precheck is off
    request.fencingToken = token;
    request.fenceResource = resource;
    if (precheck) await fence(store, resource, token, () => undefined);
  };
}

export default fp(fencePlugin, { name: "@lock/fence", fastify: "5.x" });
