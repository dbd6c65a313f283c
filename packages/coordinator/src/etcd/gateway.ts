import http from "node:http";
import https from "node:https";

/** TLS material for `etcds://` (PEM contents, not paths). */
export interface EtcdTls {
  readonly ca?: Buffer | undefined;
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
}

/** A key-value as the gateway shows it (int64 as decimal strings, bytes as base64). */
export interface KeyValue {
  readonly key?: string;
  readonly value?: string;
  readonly mod_revision?: string;
  readonly create_revision?: string;
  readonly lease?: string;
}

export interface EtcdGatewayOptions {
  /** `host:port` of each member; calls go to the last one that answered, then to the next. */
  readonly endpoints: readonly string[];
  /** Set for HTTPS (`etcds://`); plain HTTP otherwise. */
  readonly tls?: EtcdTls | undefined;
  /** etcd user and password (etcd's `auth enable`); none by default. */
  readonly auth?: { readonly user: string; readonly password: string } | undefined;
}

/** An answer of etcd's gateway that is an error (its gRPC status code and message). */
export class EtcdError extends Error {
  readonly grpcCode: number;
  constructor(grpcCode: number, message: string) {
    super(`etcd: ${message} (gRPC code ${grpcCode})`);
    this.grpcCode = grpcCode;
  }
}

const GRPC_NOT_FOUND = 5;
const GRPC_UNAUTHENTICATED = 16;
const GRPC_UNAVAILABLE = 14;
/** How long to wait before another round over every endpoint, when none answered. */
const ROUND_PAUSE_MS = 50;

/** Connect failures: the request never reached a member, so sending it to another one is always safe. */
const NOT_SENT = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * etcd v3 through its JSON gateway (`POST /v3/...`, served on the client port since etcd 3.4): plain
 * HTTP(S) from Node, no gRPC stack, so it bundles into lockd's single executable like any other code.
 * int64 fields travel as decimal strings and keys/values as base64 (the gateway's protobuf JSON).
 *
 * A call that could not reach a member, or that a member refused because the cluster has no leader,
 * goes to the next member, round after round, until its deadline: a leader election takes about one
 * election timeout. Any other failure is the caller's (its effect is unknown). Every call settles by
 * its deadline: each request is destroyed when it is reached.
 */
export class EtcdGateway {
  readonly #endpoints: readonly string[];
  readonly #agent: http.Agent;
  readonly #auth: EtcdGatewayOptions["auth"];
  readonly #tokens = new Map<string, string>();
  #preferred = 0;
  #closed = false;

  constructor(options: EtcdGatewayOptions) {
    this.#endpoints = options.endpoints;
    this.#auth = options.auth;
    this.#agent = options.tls
      ? new https.Agent({ keepAlive: true, maxSockets: 8, ...options.tls })
      : new http.Agent({ keepAlive: true, maxSockets: 8 });
  }

  /** Posts `body` to `path` and returns the parsed answer; rejects at `deadline` (`performance.now()` ms). */
  async call<T>(path: string, body: unknown, deadline: number): Promise<T> {
    let lastError: unknown = new Error("no endpoint");
    for (;;) {
      for (let tried = 0; tried < this.#endpoints.length; tried++) {
        if (this.#closed) throw new Error("the store is closed");
        const index = (this.#preferred + tried) % this.#endpoints.length;
        const endpoint = this.#endpoints[index]!;
        try {
          const answer = await this.#authorizedPost<T>(endpoint, path, body, deadline);
          this.#preferred = index;
          return answer;
        } catch (error) {
          lastError = error;
          if (!EtcdGateway.#elsewhere(error)) {
            // Its effect is unknown, so it is not sent again; but the next call starts at the next
            // member, so that a member that hangs or is cut off does not hold every later call.
            if (!(error instanceof EtcdError) || error.grpcCode === GRPC_UNAVAILABLE) {
              this.#preferred = (index + 1) % this.#endpoints.length;
            }
            throw error;
          }
        }
        if (performance.now() >= deadline) throw lastError;
      }
      await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
      if (performance.now() >= deadline) throw lastError;
    }
  }

  /**
   * Opens a streaming call (the watch): `onMessage` gets each object of the answer; `onEnd` once,
   * when the stream ends or fails for any reason (then open another). Returns the stop function.
   */
  stream(
    path: string,
    body: unknown,
    connectTimeoutMs: number,
    onMessage: (message: unknown) => void,
    onEnd: (error?: Error) => void,
  ): () => void {
    const endpoint = this.#endpoints[this.#preferred]!;
    let ended = false;
    const end = (error?: Error) => {
      if (ended) return;
      ended = true;
      onEnd(error);
    };
    const request = this.#request(endpoint, path, this.#headers(endpoint), (response) => {
      // A watch may stay silent for hours: only the wait for its answer is bounded.
      request.setTimeout(0);
      if (response.statusCode !== 200) {
        response.resume();
        this.#preferred = (this.#preferred + 1) % this.#endpoints.length;
        end(new Error(`etcd watch: HTTP ${response.statusCode}`));
        return;
      }
      let buffered = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        buffered += chunk;
        for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line === "") continue;
          let message: unknown;
          try {
            message = JSON.parse(line);
          } catch {
            request.destroy();
            end(new Error("etcd watch: unreadable answer"));
            return;
          }
          onMessage(message);
        }
      });
      response.on("end", () => end(new Error("etcd watch: the stream ended")));
      response.on("error", end);
    });
    request.setTimeout(connectTimeoutMs, () =>
      request.destroy(new Error(`etcd ${endpoint}: no answer in time`)),
    );
    request.on("error", (error) => {
      this.#preferred = (this.#preferred + 1) % this.#endpoints.length;
      end(error);
    });
    request.end(JSON.stringify(body));
    return () => {
      ended = true;
      request.destroy();
    };
  }

  /** Ends every connection; later calls reject. */
  close(): void {
    this.#closed = true;
    this.#agent.destroy();
  }

  /** Whether another member may serve a call that failed this way (it was not applied). */
  static #elsewhere(error: unknown): boolean {
    if (error instanceof EtcdError)
      return error.grpcCode === GRPC_UNAVAILABLE && /no leader/.test(error.message);
    return NOT_SENT.has((error as NodeJS.ErrnoException).code ?? "");
  }

  async #authorizedPost<T>(endpoint: string, path: string, body: unknown, deadline: number): Promise<T> {
    if (this.#auth && !this.#tokens.has(endpoint)) await this.#authenticate(endpoint, deadline);
    try {
      return await this.#post<T>(endpoint, path, body, deadline);
    } catch (error) {
      // Simple tokens are per member and expire (--auth-token-ttl): authenticate again once.
      if (!(this.#auth && error instanceof EtcdError && error.grpcCode === GRPC_UNAUTHENTICATED)) throw error;
      this.#tokens.delete(endpoint);
      await this.#authenticate(endpoint, deadline);
      return await this.#post<T>(endpoint, path, body, deadline);
    }
  }

  async #authenticate(endpoint: string, deadline: number): Promise<void> {
    const { user, password } = this.#auth!;
    const answer = await this.#post<{ token: string }>(
      endpoint,
      "/v3/auth/authenticate",
      { name: user, password },
      deadline,
    );
    this.#tokens.set(endpoint, answer.token);
  }

  #headers(endpoint: string): Record<string, string> {
    const token = this.#tokens.get(endpoint);
    return token === undefined ? {} : { authorization: token };
  }

  /** One request to one member; rejects at `deadline` at the latest (the request is then destroyed). */
  #post<T>(endpoint: string, path: string, body: unknown, deadline: number): Promise<T> {
    return new Promise<T>((resolveOuter, rejectOuter) => {
      const timer = setTimeout(
        () => request.destroy(new Error(`etcd ${endpoint}: no answer in time`)),
        Math.max(1, deadline - performance.now()),
      );
      const resolve = (value: T) => {
        clearTimeout(timer);
        resolveOuter(value);
      };
      const reject = (error: unknown) => {
        clearTimeout(timer);
        rejectOuter(error);
      };
      const request = this.#request(endpoint, path, this.#headers(endpoint), (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", reject);
        response.on("end", () => {
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            if (response.statusCode === 200) resolve(parsed as T);
            else
              reject(
                new EtcdError(Number(parsed.code ?? 2), String(parsed.message ?? parsed.error ?? "error")),
              );
          } catch (error) {
            reject(new Error(`etcd: unreadable answer (HTTP ${response.statusCode})`, { cause: error }));
          }
        });
      });
      request.on("error", reject);
      request.end(JSON.stringify(body));
    });
  }

  #request(
    endpoint: string,
    path: string,
    headers: Record<string, string>,
    onResponse: (response: http.IncomingMessage) => void,
  ): http.ClientRequest {
    const separator = endpoint.lastIndexOf(":");
    const options: http.RequestOptions = {
      host: endpoint.slice(0, separator).replace(/^\[|\]$/g, ""),
      port: Number(endpoint.slice(separator + 1)),
      path,
      method: "POST",
      agent: this.#agent,
      headers: { "content-type": "application/json", ...headers },
    };
    return this.#agent instanceof https.Agent
      ? https.request(options, onResponse)
      : http.request(options, onResponse);
  }
}

/** Whether `error` is etcd's "not found" (a lease that expired or was revoked). */
export function isNotFound(error: unknown): boolean {
  return error instanceof EtcdError && error.grpcCode === GRPC_NOT_FOUND;
}

export const base64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");
export const fromBase64 = (text: string | undefined): string =>
  Buffer.from(text ?? "", "base64").toString("utf8");
