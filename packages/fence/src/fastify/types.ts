/**
 * The plugin's public types and its augmentation of Fastify's: route `config.fence`, and the request's
 * `fencingToken`, `fenceResource` and `fenced()`.
 */
import type { FastifyRequest } from "fastify";
import type { FenceStore, FenceWrite } from "../store.js";

export interface FencePluginOptions {
  /** Where accepted tokens are recorded (any adapter: memory, Postgres, Redis). */
  store: FenceStore<unknown>;
  /** The request header that carries the token. Default "fencing-token" (matched case-insensitively). */
  header?: string;
}

/**
 * What a route's `resource` function receives. Fastify types a route's `config` without the route's
 * generics, so `app.put<{ Params: { id: string } }>` cannot reach it. Params are therefore a record of
 * `unknown` (a schema may have coerced them), enough for `(request) => `orders:${request.params.id}``;
 * annotate the parameter for more, `(request: FastifyRequest<{ Params: { id: string } }>) => …`.
 */
export type FenceResourceRequest = FastifyRequest<{ Params: Record<string, unknown> }>;

/**
 * Derives the resource from the request. Declared as a method so that a function annotated with the
 * route's own request type (`FastifyRequest<{ Params: { id: string } }>`) is accepted too.
 */
export type FenceResourceFunction = {
  resource(request: FenceResourceRequest): string;
}["resource"];

/** Route opt-in: `{ config: { fence: { resource: (request) => `orders:${request.params.id}` } } }`. */
export interface FenceRouteConfig {
  /** The fenced resource, fixed or derived from the request. */
  resource: string | FenceResourceFunction;
  /**
   * true (default): the preHandler checks and advances the token, so stale requests are refused before
   * the handler runs. The handler's own writes are NOT atomic with that check: a newer holder can write
   * between the preHandler and the handler. Writes that must be safe go through `request.fenced()`.
   * false: the preHandler only parses the token; `request.fenced()` does the one atomic check.
   */
  precheck?: boolean;
  /**
   * true: the route reads, under the read rule (fenceRead()): the preHandler and `request.fenced()`
   * check that no newer write was accepted, and a `Fencing-Mode: shared` request is accepted. Default
   * false: the route writes (fence()). Needs a store with fenceRead().
   */
  read?: boolean;
  /** With `read`: record the read's token, so that older writers are refused from then on. */
  record?: boolean;
}

/**
 * Augment this to give `request.fenced((tx) => …)` your store's transaction type, app-wide (as
 * Fastify's own decorators are typed):
 *
 *     declare module "@lock/fence/fastify" {
 *       interface FencePluginStore {
 *         store: PostgresStore;
 *       }
 *     }
 *
 * Without it `tx` is `unknown`. Where contexts register stores of different kinds, annotate `tx`
 * instead: `request.fenced((tx: RedisFenceTx) => …)`; an annotation always wins.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty until the application augments it
export interface FencePluginStore {}

/** The `tx` of `request.fenced()`: the transaction type of the store in FencePluginStore. */
export type FencedTx = FencePluginStore extends { store: FenceStore<infer Tx> } ? Tx : unknown;

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
     * and write atomically (see fence()); on a route with `read: true`, check (and record) and read
     * atomically (see fenceRead()). `tx` is the store's transaction (see FencePluginStore; a Redis
     * read's `tx` is a RedisFenceReadTx: annotate it). A stale token rejects with StaleTokenError
     * (statusCode 409). Only on fenced routes.
     */
    fenced<Tx = FencedTx, T = unknown>(write: FenceWrite<Tx, T>): Promise<Awaited<T>>;
  }
}
