import { CliError } from "./errors.js";

export interface AdminRequest {
  readonly token: string | undefined;
  readonly timeoutMs: number;
}

/** An answer from a lockd admin server: its HTTP status and parsed JSON body. */
export interface AdminAnswer {
  readonly status: number;
  readonly body: unknown;
}

/**
 * GET `path` from the admin server at `address` (plain HTTP, as lockd serves it), with the bearer
 * token when there is one. Rejects with a CliError: NO_SERVER when it cannot be reached or does not
 * answer in time, AUTH_FAILED on 401, REFUSED for a body that is not JSON or an answer that is not
 * HTTP at all (lockd's client port, given where its admin port belongs).
 */
export async function adminGet(address: string, path: string, request: AdminRequest): Promise<AdminAnswer> {
  let response: Response;
  try {
    response = await fetch(`http://${address}${path}`, {
      headers: request.token !== undefined ? { authorization: `Bearer ${request.token}` } : {},
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    const cause = (error as Error).cause as NodeJS.ErrnoException | undefined;
    // Node's HTTP parser refuses what came back (an HTTPParserError: HPE_INVALID_CONSTANT and the
    // like on Node 22, no code from Node 24 on): something answered, but not in HTTP. Most likely
    // lockd's client port, which answers `E ? - …` lines.
    if (cause?.name === "HTTPParserError" || cause?.code?.startsWith("HPE_")) {
      throw new CliError(
        "REFUSED",
        `${address} does not answer HTTP (${cause.code ?? cause.name}): this looks like lockd's client port (--listen), not its admin port (--admin)`,
      );
    }
    const reason =
      (error as Error).name === "TimeoutError"
        ? `no answer within ${request.timeoutMs} ms`
        : (cause?.code ?? cause?.message ?? (error as Error).message);
    throw new CliError("NO_SERVER", `admin server ${address}: ${reason}`);
  }
  const text = await response.text();
  if (response.status === 401) {
    throw new CliError(
      "AUTH_FAILED",
      `admin server ${address} refused the admin token${request.token === undefined ? " (none given: --admin-token-file)" : ""}`,
    );
  }
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    throw new CliError(
      "REFUSED",
      `admin server ${address} answered ${response.status} with a body that is not JSON`,
    );
  }
}
