import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { CliError } from "./errors.js";

export interface AdminRequest {
  readonly token: string | undefined;
  readonly timeoutMs: number;
  /** For an `https://` admin address: the CA (`--tls-ca-file`) its certificate must chain to. */
  readonly tls?: ConnectionOptions | undefined;
}

/** An answer from a lockd admin server: its HTTP status and parsed JSON body. */
export interface AdminAnswer {
  readonly status: number;
  readonly body: unknown;
}

/**
 * An admin address as given to --admin: `host:port` (HTTP), `http://host:port` or
 * `https://host:port` (lockd with --admin-tls-cert).
 */
export function adminUrl(address: string): URL {
  return new URL(/^https?:\/\//i.test(address) ? address : `http://${address}`);
}

/**
 * GET `path` from the admin server at `address` (HTTP, or HTTPS for an `https://` address), with the
 * bearer token when there is one. Rejects with a CliError: NO_SERVER when it cannot be reached or does
 * not answer in time, AUTH_FAILED on 401, REFUSED for a body that is not JSON or an answer that is not
 * HTTP at all (lockd's client port, given where its admin port belongs).
 */
export function adminGet(address: string, path: string, request: AdminRequest): Promise<AdminAnswer> {
  return adminCall(address, "GET", path, undefined, request);
}

/** POST `body` (as JSON) to `path`: the same answers and errors as adminGet. */
export function adminPost(
  address: string,
  path: string,
  body: unknown,
  request: AdminRequest,
): Promise<AdminAnswer> {
  return adminCall(address, "POST", path, JSON.stringify(body), request);
}

async function adminCall(
  address: string,
  method: "GET" | "POST",
  path: string,
  body: string | undefined,
  request: AdminRequest,
): Promise<AdminAnswer> {
  let answer: { status: number; text: string };
  try {
    answer = await send(adminUrl(address), { method, path, body }, request);
  } catch (error) {
    const failure = error as Error;
    // A DOMException (the TimeoutError) has a numeric code; Node's errors a string one.
    const code =
      typeof (failure as NodeJS.ErrnoException).code === "string"
        ? (failure as NodeJS.ErrnoException).code
        : undefined;
    // Node's HTTP parser refuses what came back (HPE_INVALID_CONSTANT and the like): something
    // answered, but not in HTTP. Most likely lockd's client port, which answers `E ? - …` lines.
    if (code?.startsWith("HPE_")) {
      throw new CliError(
        "REFUSED",
        `${address} does not answer HTTP (${code}): this looks like lockd's client port (--listen), not its admin port (--admin)`,
      );
    }
    const reason =
      failure.name === "TimeoutError"
        ? `no answer within ${request.timeoutMs} ms`
        : (code ?? failure.message);
    throw new CliError("NO_SERVER", `admin server ${address}: ${reason}`);
  }
  if (answer.status === 401) {
    throw new CliError(
      "AUTH_FAILED",
      `admin server ${address} refused the admin token${request.token === undefined ? " (none given: --admin-token-file)" : ""}`,
    );
  }
  try {
    return { status: answer.status, body: JSON.parse(answer.text) };
  } catch {
    throw new CliError(
      "REFUSED",
      `admin server ${address} answered ${answer.status} with a body that is not JSON`,
    );
  }
}

/** One request on a connection of its own, the whole exchange (connect, TLS, body) within the timeout. */
function send(
  url: URL,
  { method, path, body }: { method: string; path: string; body: string | undefined },
  request: AdminRequest,
): Promise<{ status: number; text: string }> {
  const https = url.protocol === "https:";
  const options = {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? (https ? 443 : 80) : Number(url.port),
    method,
    path,
    headers: {
      ...(request.token !== undefined ? { authorization: `Bearer ${request.token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    agent: false,
    signal: AbortSignal.timeout(request.timeoutMs),
    ...(https ? request.tls : {}),
  };
  return new Promise((resolve, reject) => {
    const onResponse = (response: IncomingMessage) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      response.on("error", reject);
    };
    const outgoing = https ? httpsRequest(options, onResponse) : httpRequest(options, onResponse);
    outgoing.on("error", (error: Error) => {
      // An abort by the timeout surfaces as an AbortError whose cause is the TimeoutError.
      reject(error.name === "AbortError" && error.cause instanceof Error ? error.cause : error);
    });
    outgoing.end(body);
  });
}

/** lockd's error answer (its status, and its `code` and `message` when it sent them) as exit 85. */
export function refusedBy(address: string, answer: AdminAnswer): CliError {
  const body = (answer.body ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof body.code === "string" ? ` ${body.code}` : "";
  const message = typeof body.message === "string" ? `: ${body.message}` : "";
  return new CliError("REFUSED", `admin server ${address} answered ${answer.status}${code}${message}`);
}
