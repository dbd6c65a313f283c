import type { TimerQueue } from "@lock/deadline-heap";
import { REPORT_INTERVAL_MS, ReportLimiter } from "../report-limiter.js";
import type { ClusterEvents } from "./cluster-api.js";

/** A link that keeps being refused redials every heartbeat: it is reported once a minute. */
const REFUSAL_REPORT_INTERVAL_MS = 60_000;

/**
 * The cluster's reports of peers that misbehave, rate-limited: anyone who reaches the port can
 * cause refusals at will, and a broken link repeats its violation with every redial.
 */
export class PeerReports {
  readonly #events: ClusterEvents;
  readonly #now: () => number;
  readonly #rejections: ReportLimiter<{ remote: string; node: string | undefined; reason: string }>;
  readonly #violations: ReportLimiter<{ peer: string; reason: string }>;
  readonly #refusalReportedAt = new Map<string, number>();

  /** `timers`: the node's, so its report intervals run on the node's clock (the simulator's too). */
  constructor(events: ClusterEvents, timers: TimerQueue) {
    this.#events = events;
    this.#now = () => timers.clock.now();
    this.#rejections = new ReportLimiter(
      ({ remote, node, reason }, count) => events.peerRejected(remote, node, reason, count),
      REPORT_INTERVAL_MS,
      timers,
    );
    this.#violations = new ReportLimiter(
      ({ peer, reason }, count) => events.peerLinkDropped(peer, reason, count),
      REPORT_INTERVAL_MS,
      timers,
    );
  }

  /** An incoming connection was refused as a peer (see `ClusterEvents.peerRejected`). */
  rejected(remote: string, node: string | undefined, reason: string): void {
    this.#rejections.event({ remote, node, reason });
  }

  /** A peer link (either direction) broke the protocol and was dropped. */
  violation(peer: string, reason: string): void {
    this.#violations.event({ peer, reason });
  }

  /** A peer refused this node's link: reported at most once a minute per peer. */
  refused(address: string, reply: string): void {
    const now = this.#now();
    const last = this.#refusalReportedAt.get(address);
    if (last !== undefined && now - last < REFUSAL_REPORT_INTERVAL_MS) return;
    this.#refusalReportedAt.set(address, now);
    this.#events.peerRefused(address, reply);
  }

  /** Reports what was counted and not reported yet (stop). */
  flush(): void {
    this.#rejections.flush();
    this.#violations.flush();
  }
}
