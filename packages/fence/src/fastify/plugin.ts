import { STATUS_CODES } from "node:http";
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import { FenceError, StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import { FENCING_TOKEN_HEADER, parseFencingHeader } from "../headers.js";
import { assertResource } from "../resource.js";
import type { FenceStore, FenceWrite } from "../store.js";
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
    // Path params are an object by now: the router has run.
    const resource =
      typeof config.resource === "function"
        ? config.resource(request as FenceResourceRequest)
        : config.resource;
    assertResource(resource); // a bad name is a server bug: 500, also when precheck is off
    request.fencingToken = token;
    request.fenceResource = resource;
    if (precheck) await fence(store, resource, token, () => undefined);
  };
}

export default fp(fencePlugin, { name: "@lock/fence", fastify: "5.x" });
