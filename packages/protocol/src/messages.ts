/**
 * Message types of the lockd wire protocol. `docs/protocol.md` is the normative grammar;
 * these types are its TypeScript face. Durations are integer milliseconds here and decimal
 * seconds (millisecond resolution) on the wire; tokens are u64 `bigint`s.
 */

import type { LockMode } from "./lock-mode.js";
import type { SlotMap } from "./slot-map.js";
import type { KeyStateReply, UnwatchedReply, UnwatchRequest, WatchRequest } from "./watch-messages.js";

/** Client-to-server request verbs (one ASCII letter each). */
export type RequestOp = "A" | "Y" | "Q" | "W" | "R" | "X" | "C" | "P" | "H" | "I" | "K" | "O" | "U" | "B";

/** Acquire: wait for the key. `waitMs` 0 waits forever. `id` makes a retry find its own grant. */
export interface AcquireRequest {
  readonly op: "A";
  readonly key: string;
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly id?: string;
}

/** Try-acquire: grant now or answer `N` at once; never queues. */
export interface TryAcquireRequest {
  readonly op: "Y";
  readonly key: string;
  readonly leaseMs: number;
  readonly id?: string;
}

/**
 * Acquire in a mode (shared, or a permit of a semaphore; exclusive too): wait for the key like `A`.
 * The id is required: replies are matched by it.
 */
export interface ModeAcquireRequest {
  readonly op: "Q";
  readonly key: string;
  readonly mode: LockMode;
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly id: string;
}

/** Try-acquire in a mode: grant now or answer `N` at once, like `Y`. The id is required. */
export interface ModeTryAcquireRequest {
  readonly op: "W";
  readonly key: string;
  readonly mode: LockMode;
  readonly leaseMs: number;
  readonly id: string;
}

/**
 * Release the key if `token` still holds it. `id`, the acquire's request id, proves the caller is
 * the holder when it asks from another connection than the one that was granted the key.
 */
export interface ReleaseRequest {
  readonly op: "R";
  readonly key: string;
  readonly token: bigint;
  readonly id?: string;
}

/** Extend the lease of `token` to `leaseMs` from now; `id` as for a release. */
export interface ExtendRequest {
  readonly op: "X";
  readonly key: string;
  readonly token: bigint;
  readonly leaseMs: number;
  readonly id?: string;
}

/**
 * Cancel the queued acquire `id` of `key` (the caller gave up waiting). The acquire itself is
 * answered `T`; the cancel is answered `C <key> 1` if it was still queued, `C <key> 0` if not
 * (already granted, timed out, or unknown: a caller that aborted must then release any grant).
 */
export interface CancelRequest {
  readonly op: "C";
  readonly key: string;
  readonly id: string;
}

/**
 * Bundle: acquire every key of `keys` at once (exclusively, one token and one lease for all), or
 * none; waits like `A`. The id is required. On the wire `B <key> <lease> <wait> <id> [<key> ...]`:
 * `keys[0]` is the key every reply to it names (`B`, `T`, `M`, `S`, `E`), whatever order the
 * server holds them in. `R`/`X`/`C` of any of its keys address the whole bundle.
 */
export interface BundleRequest {
  readonly op: "B";
  readonly keys: readonly string[];
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly id: string;
}

/** The most keys one `B` line may carry; a server may allow fewer (`TOO_MANY_BUNDLE_KEYS`). */
export const MAX_BUNDLE_LINE_KEYS = 1024;

/** Ping; the optional nonce is echoed. */
export interface PingRequest {
  readonly op: "P";
  readonly nonce?: string;
}

/** Authenticate the connection with the shared secret. */
export interface HelloRequest {
  readonly op: "H";
  readonly secret: string;
}

/** Ask for the server's status. */
export interface InfoRequest {
  readonly op: "I";
}

/** Ask for the slot map: which cluster serves which key slots (docs/protocol.md, "Key slots"). */
export interface KeyspaceRequest {
  readonly op: "K";
}

export type Request =
  | KeyspaceRequest
  | AcquireRequest
  | TryAcquireRequest
  | ModeAcquireRequest
  | ModeTryAcquireRequest
  | ReleaseRequest
  | ExtendRequest
  | CancelRequest
  | BundleRequest
  | PingRequest
  | HelloRequest
  | InfoRequest
  | WatchRequest
  | UnwatchRequest;

/** Server-to-client reply kinds. */
export type ReplyKind =
  | "A"
  | "T"
  | "Y"
  | "N"
  | "Q"
  | "W"
  | "R"
  | "X"
  | "C"
  | "P"
  | "H"
  | "I"
  | "K"
  | "M"
  | "S"
  | "E"
  | "O"
  | "U"
  | "B";

/** `A`: the acquire was granted with this fencing token. */
export interface GrantedReply {
  readonly kind: "A";
  readonly key: string;
  readonly token: bigint;
  readonly id?: string;
}

/**
 * `Q`/`W`: the acquire (or try-acquire) in a mode was granted with this token; `slot` is a
 * permit's slot (0..limit−1), undefined for exclusive and shared grants.
 */
export interface ModeGrantedReply {
  readonly kind: "Q" | "W";
  readonly key: string;
  readonly token: bigint;
  readonly slot: number | undefined;
  readonly id: string;
}

/** `B`: the bundle was granted: every key of it, under this one token. `key` is the request's first key. */
export interface BundleGrantedReply {
  readonly kind: "B";
  readonly key: string;
  readonly token: bigint;
  readonly id: string;
}

/** `T`: the acquire's wait ran out; nothing was granted. */
export interface TimedOutReply {
  readonly kind: "T";
  readonly key: string;
  readonly id?: string;
}

/** `Y`: the try-acquire was granted. */
export interface TryGrantedReply {
  readonly kind: "Y";
  readonly key: string;
  readonly token: bigint;
  readonly id?: string;
}

/** `N`: the try-acquire found the key held (or queued for); nothing was granted. */
export interface TryBusyReply {
  readonly kind: "N";
  readonly key: string;
  readonly id?: string;
}

/** `R`: `released` is true if the token still held the key and released it. */
export interface ReleasedReply {
  readonly kind: "R";
  readonly key: string;
  readonly released: boolean;
}

/** `X`: `extended` is true if the token still held the key and its lease was extended. */
export interface ExtendedReply {
  readonly kind: "X";
  readonly key: string;
  readonly extended: boolean;
}

/** `C`: `cancelled` is true if the acquire was still queued and has been withdrawn. */
export interface CancelledReply {
  readonly kind: "C";
  readonly key: string;
  readonly cancelled: boolean;
}

export interface PongReply {
  readonly kind: "P";
  readonly nonce?: string;
}

/** `H`: authentication accepted. A refused secret gets an `E` reply with `AUTH_FAILED`, and the connection is closed. */
export interface HelloReply {
  readonly kind: "H";
}

/** `I`: server status as ordered `name=value` fields. */
export interface InfoReply {
  readonly kind: "I";
  readonly fields: ReadonlyMap<string, string>;
}

/** `M`: this node is not the active; re-send the request to `address` (host:port). */
export interface RedirectReply {
  readonly kind: "M";
  readonly op: RequestOp;
  readonly key: string;
  readonly address: string;
  readonly id?: string;
}

/** `K`: the slot map this node serves by; undefined (`K 0`) when it has none and serves every key. */
export interface KeyspaceReply {
  readonly kind: "K";
  readonly map: SlotMap | undefined;
}

/**
 * `S`: the key's slot belongs to another cluster in slot map `version`: re-send the request to
 * `cluster`, at `address` (its active, if this node knows it; a node of it otherwise).
 */
export interface SlotRedirectReply {
  readonly kind: "S";
  readonly op: RequestOp;
  readonly key: string;
  readonly slot: number;
  readonly version: bigint;
  readonly cluster: string;
  readonly address: string;
  readonly id?: string;
}

/** `E`: the request failed with a stable error code. `op`/`key` are "?"/"-" when unknown. */
export interface ErrorReply {
  readonly kind: "E";
  readonly op: RequestOp | "?";
  readonly key: string;
  readonly id?: string;
  readonly code: ErrorCode;
  readonly message: string;
}

export type Reply =
  | GrantedReply
  | ModeGrantedReply
  | BundleGrantedReply
  | TimedOutReply
  | TryGrantedReply
  | TryBusyReply
  | ReleasedReply
  | ExtendedReply
  | CancelledReply
  | PongReply
  | HelloReply
  | InfoReply
  | RedirectReply
  | KeyspaceReply
  | SlotRedirectReply
  | ErrorReply
  | KeyStateReply
  | UnwatchedReply;

/**
 * Stable error codes carried by `E` replies. Codec codes are produced by the decoder; server
 * codes by lockd. `retryable` codes mean "send the same request again shortly".
 */
export const ERROR_CODES = {
  // Produced by the decoder for a malformed line.
  LINE_TOO_LONG: "the line exceeds the line limit; it was discarded up to the next newline",
  BAD_ENCODING: "the line is not valid UTF-8",
  BAD_SYNTAX: "unknown verb or wrong number of fields",
  BAD_KEY: "the key is empty or contains a space or control character",
  KEY_TOO_LONG: "the key exceeds the key limit in UTF-8 bytes",
  BAD_DURATION: "a lease or wait is not decimal seconds with at most 3 fraction digits",
  BAD_TOKEN: "a token is not a canonical decimal u64",
  BAD_ID: "a request id does not match [A-Za-z0-9][A-Za-z0-9_.:-]{0,63}",
  BAD_ARGUMENT: "another field is malformed",
  // Produced by the server.
  NOT_AUTHENTICATED: "this server requires `H <secret>` before any other verb",
  AUTH_FAILED: "the secret is wrong; the connection is closed",
  LEASE_OUT_OF_RANGE: "the lease is 0 or above the server's maximum lease",
  WAIT_OUT_OF_RANGE: "the wait is above the server's maximum wait",
  TOO_MANY_WAITERS: "the key's wait queue is full",
  KIND_MISMATCH:
    "the key is held or queued for as another kind (a lock: exclusive or shared; or a semaphore); nothing changed",
  LOCK_MODES_UNAVAILABLE:
    "a cluster node runs an older lockd that cannot replicate shared locks or permits; they are refused until every node is upgraded",
  LIMIT_MISMATCH:
    "the key is a semaphore with another number of permits (the message starts with limit=<N>); nothing changed",
  TOO_MANY_REQUESTS: "the connection has too many requests outstanding",
  TOO_MANY_CONNECTIONS: "the server is at its connection limit; the connection is closed",
  TOO_MANY_UNAUTHENTICATED:
    "a newer connection took this one's slot before it authenticated; the connection is closed",
  TOO_MANY_KEYS: "the server is at its limit of keys held or queued for",
  TOO_MANY_CONNECTION_KEYS:
    "this connection holds or has queued acquires for as many keys as the server allows one connection",
  TOO_MANY_WATCHES: "the server watches as many keys for its connections as it allows in total",
  TOO_MANY_CONNECTION_WATCHES: "this connection watches as many keys as the server allows one connection",
  NOT_OWNER:
    "the token holds the key, but the request neither came on the connection that was granted it nor carried the acquire's request id; nothing changed",
  IDLE_TIMEOUT: "the connection was idle too long; it is closed",
  AUTH_TIMEOUT: "the connection did not authenticate in time; it is closed",
  SLOW_READER:
    "the client left too many replies unread, or unread for too long; the connection is closed at once",
  NO_ACTIVE:
    "this node is a standby that knows no active yet, or an active confirming its role or waiting for its new epoch; retry shortly (retryable)",
  SHUTTING_DOWN: "the server is shutting down; retry on another node (retryable)",
  SLOT_MOVING:
    "the key's slot is moving to another cluster: no acquire or extension until the move commits; an acquire retries shortly within its wait, a holder may still release",
  INTERNAL: "an unexpected server error; the request had no effect",
  // Cluster peer links (docs/protocol.md, "Peer handshake").
  // Bundles (`B`).
  TOO_MANY_BUNDLE_KEYS:
    "a bundle names more distinct keys than the server allows in one (`--max-bundle-keys`, 32 by default)",
  CROSS_SLOT:
    "with a slot map, a bundle's keys must share one key slot: tag them (`{acct}:a`, `{acct}:b`); nothing changed",
  BUNDLES_UNAVAILABLE:
    "a cluster node runs an older lockd that cannot replicate bundles; `B` is refused until every node is upgraded",
  PEER_NOT_AUTHENTICATED:
    "a peer frame on a connection that has not authenticated as a cluster peer; the connection is closed",
  PEER_AUTH_FAILED:
    "the peer handshake failed (wrong peer token, or a node not in the peers list); the connection is closed",
  PEER_PROTOCOL_ERROR:
    "a malformed, out-of-range or out-of-place frame on a peer link; nothing of it was applied, the link is closed",
  PEER_VERSION_UNSUPPORTED:
    "the peer's protocol version is outside this node's compatibility window (upgrade one release at a time); the connection is closed",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Codes after which re-sending the same request shortly is expected to work. */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set(["NO_ACTIVE", "SHUTTING_DOWN"]);

/** Codes after which the server closes the connection. */
export const FATAL_CODES: ReadonlySet<ErrorCode> = new Set([
  "TOO_MANY_CONNECTIONS",
  "TOO_MANY_UNAUTHENTICATED",
  "IDLE_TIMEOUT",
  "AUTH_TIMEOUT",
  "AUTH_FAILED",
  "SLOW_READER",
  "PEER_NOT_AUTHENTICATED",
  "PEER_AUTH_FAILED",
  "PEER_PROTOCOL_ERROR",
  "PEER_VERSION_UNSUPPORTED",
]);
