/**
 * The peer protocol's version (docs/protocol.md, "Peer protocol versions"): what a node announces in
 * its handshake (`!N`, `!C`) and which versions it links with. Bump PEER_PROTOCOL_VERSION when the
 * peer frames change; raise OLDEST_PEER_PROTOCOL to drop the release before the previous one. The
 * window is this release's and the previous release's, so a cluster upgrades one node at a time.
 */
/** This release's peer protocol (lockd 0.2). */
export const PEER_PROTOCOL_VERSION = 2;
/** The oldest peer protocol this release links with: version 1, lockd 0.1.0's, which sends none. */
export const OLDEST_PEER_PROTOCOL = 1;
/** What a handshake without a version speaks: lockd 0.1.0 predates the version field. */
export const UNVERSIONED_PEER_PROTOCOL = 1;

/**
 * Why a peer announcing `version` (undefined: none, lockd 0.1.0) cannot link with this node, or
 * undefined when it can. A newer peer is accepted: it knows its own window and refuses us if we are
 * outside it.
 */
export function peerVersionProblem(
  version: number | undefined,
  oldest = OLDEST_PEER_PROTOCOL,
): string | undefined {
  const spoken = version ?? UNVERSIONED_PEER_PROTOCOL;
  if (spoken >= oldest) return undefined;
  return `the peer speaks peer protocol ${spoken}${version === undefined ? " (no version: lockd 0.1.0)" : ""}, older than this node's window (${oldest} to ${PEER_PROTOCOL_VERSION}): upgrade it one release at a time`;
}

/** The first peer protocol whose heartbeats say whether a standby is synced (`!B … <synced>`). */
export const SYNCED_FLAG_PEER_PROTOCOL = 2;

/** The first peer protocol with shared holders and permits (`!q`, `!Q`). */
export const LOCK_MODES_PEER_PROTOCOL = 2;

/**
 * Shared holders and permits travel as `!q`/`!Q`, which a node of peer protocol 1 (lockd 0.1.0)
 * refuses: while one is linked, the active does not grant them, or that node could not follow it.
 */
export function lockModesRefusal(
  links: Iterable<{ readonly address: string; readonly peerProtocol?: number | undefined }>,
): string | undefined {
  for (const link of links)
    if (link.peerProtocol !== undefined && link.peerProtocol < LOCK_MODES_PEER_PROTOCOL)
      return `the cluster node ${link.address} runs an older lockd (peer protocol ${link.peerProtocol}) that cannot replicate shared locks or permits: upgrade every node first`;
  return undefined;
}
