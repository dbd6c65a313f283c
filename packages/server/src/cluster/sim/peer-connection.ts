import { isDecodeError, isPeerFrame, type PeerFrame, parseRequestLine } from "@lock/protocol";
import type { Cluster } from "../cluster.js";
import type { PeerListener } from "../peer/peer-listener.js";
import type { Connection, ConnectionEnd, Network } from "./network.js";

/** What a peer's connection needs of its simulated node, and what it tells the checker. */
export interface PeerHost {
  readonly network: Network;
  /** The node's cluster and node while it runs (undefined once killed). */
  readonly cluster: Pick<Cluster, "guardGrants" | "replicaSource"> | undefined;
  readonly lock: { afterRequests(): void } | undefined;
  /** The highest epoch any frame processed carried (see SimNode.toldEpoch). */
  toldEpoch: bigint;
  readonly heardSinceStart: Set<string>;
  syncedSinceStart: boolean;
}

/**
 * A peer's connection to a simulated node: every line goes to the real PeerListener (the handshake,
 * then the link's PeerSession), as lockd's ClientConnection hands it peer frames. Its frames are
 * also counted for the checker (the epochs they tell, whom the node heard), independently of what
 * the node makes of them.
 */
export function acceptPeer(
  host: PeerHost,
  from: string,
  connection: Connection,
  cluster: Cluster,
): ConnectionEnd {
  const { network } = host;
  let closing = false;
  const fail = (code: string, message: string) => {
    if (closing) return;
    closing = true;
    network.send(connection, 1, `E ? - ${code} - ${message}\n`);
    network.close(connection, 1);
  };
  const listener: PeerListener = cluster.peerListener({
    remote: from,
    authenticated: true,
    servedClient: false,
    get closing() {
      return closing;
    },
    send: (line) => {
      if (!closing) network.send(connection, 1, line);
    },
    fail,
    // A wrong proof is answered at once: lockd's delay before the answer is a socket concern.
    failAfterDelay: fail,
    close: () => {
      closing = true;
      network.close(connection, 1);
    },
    challenged: () => {},
    becamePeer: () => {},
  });
  const read = (line: string) => {
    const frame = parseRequestLine(line);
    if (isDecodeError(frame)) listener.undecodable(frame);
    else if (!isPeerFrame(frame)) {
      if (!listener.request(frame.op)) throw new Error(`${from} sent ${JSON.stringify(line)} as a client`);
    } else {
      if (listener.isLink) {
        for (const epoch of epochsIn(frame)) if (epoch > host.toldEpoch) host.toldEpoch = epoch;
        host.heardSinceStart.add(from);
      }
      listener.frame(frame);
      if (host.cluster?.replicaSource !== undefined) host.syncedSinceStart = true;
    }
  };
  return {
    onLine: (text) => {
      host.cluster?.guardGrants();
      for (const line of text.split("\n")) if (line !== "" && !closing) read(line);
      listener.endOfRead();
      host.lock?.afterRequests();
    },
    onClose: () => {},
  };
}

/** The epochs a peer frame tells its receiver of. */
function epochsIn(frame: PeerFrame): bigint[] {
  switch (frame.peer) {
    case "J":
    case "B":
      return [frame.epoch, frame.highest];
    case "S":
    case "P":
    case "O":
      return [frame.epoch];
    default:
      return [];
  }
}
