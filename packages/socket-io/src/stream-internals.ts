/**
 * The pieces of Node's stream plumbing that `net.Socket#write` itself uses, found once, on first use
 * (never at import: importing this package must cost nothing, even under --throw-deprecation). None
 * of them is public API, so each is checked for the shape this package relies on; when any is
 * missing (another Node, another runtime) `streamInternals()` is undefined and writers fall back to
 * `socket.write`. Checked on Node 20.
 */

/** A write request: C++ takes it over only when a write cannot complete at once. */
export interface WriteRequest {
  handle?: unknown;
  oncomplete?: (status: number) => void;
}

/** The socket's libuv handle, as `socket._handle`. */
export interface StreamHandle {
  /** Writes `text` as UTF-8; 0 or a negative errno. Sync or async is told by `lastWriteWasAsync`. */
  writeUtf8String(request: WriteRequest, text: string): number;
}

export interface StreamInternals {
  newRequest(): WriteRequest;
  /** True when the last write left bytes queued in libuv (its request then completes later). */
  lastWriteWasAsync(): boolean;
}

function find(): StreamInternals | undefined {
  try {
    // `process.binding` is deprecated (DEP0111, a warning only under --pending-deprecation) but
    // still how userland reaches the request class `net` uses; it is asked for nothing else.
    const binding = (process as unknown as { binding?: (name: string) => unknown }).binding?.(
      "stream_wrap",
    ) as { WriteWrap?: unknown; streamBaseState?: unknown; kLastWriteWasAsync?: unknown } | undefined;
    if (binding === undefined) return undefined;
    const { WriteWrap, streamBaseState, kLastWriteWasAsync } = binding;
    if (typeof WriteWrap !== "function") return undefined;
    if (!(streamBaseState instanceof Int32Array) || typeof kLastWriteWasAsync !== "number") return undefined;
    const Request = WriteWrap as new () => WriteRequest;
    return {
      newRequest: () => new Request(),
      lastWriteWasAsync: () => streamBaseState[kLastWriteWasAsync] !== 0,
    };
  } catch {
    return undefined;
  }
}

let probed = false;
let found: StreamInternals | undefined;

/** The internals, looked for on the first call (which may print DEP0111 under --pending-deprecation). */
export function streamInternals(): StreamInternals | undefined {
  if (!probed) {
    probed = true;
    found = find();
  }
  return found;
}
