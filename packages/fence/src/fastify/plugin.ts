import { STATUS_CODES } from "node:http";
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { fence, fenceRead } from "../fence.js";
import { type FencingGrant, grantToken } from "../grant.js";
import { FENCING_TOKEN_HEADER, parseFencingRequest } from "../headers.js";
import { assertResource } from "../resource.js";
import { parseSlotResource } from "../slot.js";
import type { FenceStore, FenceWrite, ReadFenceStore } from "../store.js";
import type { FenceErrorBody, FencePluginOptions, FenceResourceRequest, FenceRouteConfig } from "./types.js";

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
  fastify.decorateRequest("fenced", function fenced<Tx, T>(this: FastifyRequest, body: FenceWrite<Tx, T>) {
    const config = this.routeOptions.config.fence;
    if (this.fencingToken === null || this.fenceResource === null || config === undefined) {
      return Promise.reject(
        new FenceError("FENCE_BAD_OPTIONS", "request.fenced() is only available on routes with config.fence"),
      );
    }
    // The preHandler has checked the request's slot and mode against the route: the token is enough.
    if (config.read !== true)
      return fence(store as FenceStore<Tx>, this.fenceResource, this.fencingToken, body);
    const reads = store as ReadFenceStore<unknown, Tx>;
    return fenceRead(reads, this.fenceResource, this.fencingToken, body, { record: config.record === true });
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
    checkRouteModes(store, route.url, config);
    const guard = fenceGuard(store, header, config);
    // First among the route's preHandlers: nothing else should spend work on a refused request.
    const existing = route.preHandler ?? [];
    route.preHandler = [guard, ...(Array.isArray(existing) ? existing : [existing])];
  });
}

/** FENCE_BAD_OPTIONS unless `read` and `record` are booleans, `record` only with `read`, on a store that reads. */
function checkRouteModes(store: FenceStore<unknown>, url: string, config: FenceRouteConfig): void {
  const { read, record } = config;
  const problem =
    (read !== undefined && typeof read !== "boolean") || (record !== undefined && typeof record !== "boolean")
      ? "config.fence.read and .record are booleans"
      : record === true && read !== true
        ? "config.fence.record needs read: true (it records a read)"
        : read === true && !hasMethods(store, "fenceRead", "currentRead")
          ? "config.fence.read needs a store that implements the read rule (fenceRead())"
          : undefined;
  if (problem !== undefined) throw new FenceError("FENCE_BAD_OPTIONS", `route ${url}: ${problem}`);
}

/**
 * What the request presents, as fence() takes it: the bare token, or, with a Fencing-Slot or
 * Fencing-Mode header, the lock, so that grantToken() refuses a permit's token on another resource
 * than its slot's and a reader's on a route that writes. The key a permit's slot belongs to is not
 * sent; it is the route's, when the route's resource is a slot's.
 */
function presentedGrant(headers: FastifyRequest["headers"], header: string, resource: string): FencingGrant {
  const { token, slot, mode } = parseFencingRequest(headers, header);
  if (slot === undefined) return mode === undefined ? token : { token, mode };
  const route = parseSlotResource(resource);
  if (route === undefined) {
    throw new FenceError(
      "FENCE_SLOT_MISMATCH",
      `the request presents a permit (slot ${slot}), but ${JSON.stringify(resource)} is not a slot's resource: ` +
        "a permit's token fences its own slot's resource only",
    );
  }
  return { token, slot, key: route.key, ...(mode === undefined ? {} : { mode }) };
}

function fenceGuard(
  store: FenceStore<unknown>,
  header: string,
  config: FenceRouteConfig,
): preHandlerAsyncHookHandler {
  const precheck = config.precheck ?? true;
  const read = config.read === true;
  // Refusals are thrown, never sent: like any Fastify error they reach the app's error handler (and
  // onError hooks), and without one Fastify's default handler answers with its usual body.
  return async function fenceGuard(request: FastifyRequest) {
    // Path params are an object by now: the router has run.
    const resource =
      typeof config.resource === "function"
        ? config.resource(request as FenceResourceRequest)
        : config.resource;
    assertResource(resource); // a bad name is a server bug: 500, also when precheck is off
    const token = grantToken(
      resource,
      presentedGrant(request.headers, header, resource),
      read ? "read" : "write",
    );
    request.fencingToken = token;
    request.fenceResource = resource;
    if (!precheck) return;
    if (read) await fenceRead(store as ReadFenceStore<unknown>, resource, token, () => undefined, config);
    else await fence(store, resource, token, () => undefined);
  };
}

export default fp(fencePlugin, { name: "@lock/fence", fastify: "5.x" });
