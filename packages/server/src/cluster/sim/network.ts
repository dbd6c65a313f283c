import type { Rng } from "./rng.js";
import type { Scheduler } from "./scheduler.js";

/** One side's handlers of a connection: lines in order, then at most one close. */
export interface ConnectionEnd {
  onLine(line: string): void;
  onClose(): void;
}

/** A machine on the simulated network: a lockd node or a client. */
export interface Host {
  readonly name: string;
  /** A process listens and runs; false while killed (connections to it are refused). */
  readonly up: boolean;
  /** Stopped (SIGSTOP): what reaches it waits until it runs again. */
  readonly stalled: boolean;
  /** Bumped by every start of its process: connections of an earlier process never reach it. */
  readonly generation: number;
  /** Runs `work` now, or once the host resumes if it is stalled. */
  defer(work: () => void): void;
  /** An incoming connection from `from`: the host's end of it, or undefined to refuse. */
  accept(from: string, connection: Connection): ConnectionEnd | undefined;
}

type Side = 0 | 1;

interface Direction {
  /** When the last line sent this way arrives: lines never overtake each other. */
  lastAt: number;
  /** Lines sent while the path was cut: they wait in the sender's buffer, as TCP would. */
  readonly held: string[];
}

/**
 * A TCP-like connection between two hosts: ordered and reliable. A close (a process exiting or
 * killed, a socket destroyed) still delivers what the closing side had sent, then the other side
 * sees the close; what was on its way to the closed side is dropped. Side 0 dialled, side 1 accepted.
 */
export class Connection {
  readonly ends: [ConnectionEnd | undefined, ConnectionEnd | undefined] = [undefined, undefined];
  readonly directions: [Direction, Direction] = [
    { lastAt: 0, held: [] },
    { lastAt: 0, held: [] },
  ];
  open = true;
  /** Lines towards this side are dropped: its process closed the connection. */
  readonly gone: [boolean, boolean] = [false, false];
  /** The process generation of each side's host when it joined the connection. */
  readonly generations: [number, number] = [-1, -1];

  constructor(
    readonly id: number,
    readonly hosts: readonly [string, string],
  ) {}
}

/**
 * The simulated network: latency with jitter, per-pair extra delay, and cuts (symmetric or one
 * way). A cut holds lines in the sender's buffer until it heals (a partition does not close TCP
 * connections); the nemesis resets connections separately.
 */
export class Network {
  readonly #scheduler: Scheduler;
  readonly #rng: Rng;
  readonly #hosts = new Map<string, Host>();
  readonly #connections = new Set<Connection>();
  /** Cut paths, as "from>to", with how many faults cut each (they overlap). */
  readonly #cuts = new Map<string, number>();
  readonly #extraDelay = new Map<string, number>();
  /** Dials on their way: a host killed meanwhile takes the dials it made with it. */
  readonly #dialing = new Set<{ readonly from: string; readonly to: string; dead: boolean }>();
  #ids = 0;

  constructor(scheduler: Scheduler, rng: Rng) {
    this.#scheduler = scheduler;
    this.#rng = rng;
  }

  addHost(host: Host): void {
    this.#hosts.set(host.name, host);
  }

  hasHost(name: string): boolean {
    return this.#hosts.has(name);
  }

  host(name: string): Host {
    const host = this.#hosts.get(name);
    if (!host) throw new Error(`no host ${name}`);
    return host;
  }

  /** Dials `to`: `opened` with the connection, or `failed` after a round trip (refused or cut). */
  dial(
    from: string,
    to: string,
    end: ConnectionEnd,
    opened: (c: Connection) => void,
    failed: () => void,
  ): void {
    const connection = new Connection(this.#ids++, [from, to]);
    connection.generations[0] = this.host(from).generation;
    const attempt = { from, to, dead: false };
    this.#dialing.add(attempt);
    const there = this.#latency(from, to);
    this.#scheduler.after(there, () => {
      const target = this.#hosts.get(to);
      if (attempt.dead) {
        this.#dialing.delete(attempt);
        return;
      }
      if (!target?.up || this.isCut(from, to) || target.stalled) {
        this.#dialing.delete(attempt);
        this.#scheduler.after(this.#latency(to, from), () => this.host(from).defer(failed));
        return;
      }
      connection.generations[1] = target.generation;
      const accepted = target.accept(from, connection);
      if (!accepted) {
        this.#dialing.delete(attempt);
        this.#scheduler.after(this.#latency(to, from), () => this.host(from).defer(failed));
        return;
      }
      connection.ends[1] = accepted;
      connection.ends[0] = end;
      this.#connections.add(connection);
      // Reset before the dialler heard it was accepted: to the dialler, a failed dial. A dialler
      // killed meanwhile never hears of it; the acceptor sees the connection close.
      this.#scheduler.after(this.#latency(to, from), () => {
        this.#dialing.delete(attempt);
        if (attempt.dead) {
          this.close(connection, 0);
          return;
        }
        this.#defer(connection, 0, () => (connection.open ? opened(connection) : failed()));
      });
    });
  }

  /** Sends `line` from `side`'s host to the other side. */
  send(connection: Connection, side: Side, line: string): void {
    if (!connection.open) return;
    const from = connection.hosts[side];
    const to = connection.hosts[side === 0 ? 1 : 0];
    const direction = connection.directions[side];
    if (this.isCut(from, to) || direction.held.length > 0) {
      direction.held.push(line);
      return;
    }
    this.#deliver(connection, side, line);
  }

  /**
   * Closes `connection` from `side`: the other side receives what was already sent, then the close.
   * Lines held by a cut are lost with the connection.
   */
  close(connection: Connection, side: Side): void {
    // Closed from the other side already: this side's process is gone too, and receives nothing.
    connection.gone[side] = true;
    if (!connection.open) return;
    connection.open = false;
    this.#connections.delete(connection);
    const other: Side = side === 0 ? 1 : 0;
    const end = connection.ends[other];
    const otherHost = connection.hosts[other];
    const direction = connection.directions[side];
    direction.held.length = 0;
    const at = Math.max(
      this.#scheduler.now + this.#latency(connection.hosts[side], otherHost),
      direction.lastAt,
    );
    direction.lastAt = at;
    this.#scheduler.at(at, () =>
      this.#defer(connection, other, () => {
        if (connection.gone[other]) return;
        connection.gone[other] = true;
        end?.onClose();
      }),
    );
  }

  /** Every open connection of `host` is reset (it was killed): the other sides see them close. */
  resetHost(host: string): void {
    // Its own dials die with it; dials to it find it down (or restarted) when they arrive.
    for (const attempt of this.#dialing) if (attempt.from === host) attempt.dead = true;
    for (const connection of [...this.#connections]) {
      const side = connection.hosts.indexOf(host);
      if (side >= 0) this.close(connection, side as Side);
    }
  }

  /**
   * Resets one connection at random among those `filter` accepts (a middlebox dropped it): what is
   * in flight is lost, and each side sees the close after the latency.
   */
  resetOne(filter: (c: Connection) => boolean): Connection | undefined {
    const candidates = [...this.#connections].filter(filter);
    if (candidates.length === 0) return undefined;
    const connection = this.#rng.pick(candidates);
    connection.open = false;
    this.#connections.delete(connection);
    for (const side of [0, 1] as const) {
      connection.directions[side].held.length = 0;
      connection.gone[side] = true;
      const host = connection.hosts[side];
      const end = connection.ends[side];
      this.#scheduler.after(this.#latency(connection.hosts[side === 0 ? 1 : 0], host), () =>
        this.#defer(connection, side, () => end?.onClose()),
      );
    }
    return connection;
  }

  isCut(from: string, to: string): boolean {
    return this.#cuts.has(`${from}>${to}`);
  }

  cut(from: string, to: string): void {
    const path = `${from}>${to}`;
    this.#cuts.set(path, (this.#cuts.get(path) ?? 0) + 1);
  }

  /** Ends one cut of the path; once none is left, the lines it held flow again, in order. */
  uncut(from: string, to: string): void {
    const path = `${from}>${to}`;
    const count = this.#cuts.get(path) ?? 0;
    if (count > 1) {
      this.#cuts.set(path, count - 1);
      return;
    }
    this.#cuts.delete(path);
    for (const connection of this.#connections) {
      const [a, b] = connection.hosts;
      const side: Side | undefined = a === from && b === to ? 0 : b === from && a === to ? 1 : undefined;
      if (side === undefined) continue;
      for (const line of connection.directions[side].held.splice(0)) this.#deliver(connection, side, line);
    }
  }

  setDelay(from: string, to: string, ms: number): void {
    if (ms <= 0) this.#extraDelay.delete(`${from}>${to}`);
    else this.#extraDelay.set(`${from}>${to}`, ms);
  }

  /** Removes every cut and extra delay; held lines flow again, in order. */
  healAll(): void {
    this.#cuts.clear();
    this.#extraDelay.clear();
    for (const connection of this.#connections) {
      for (const side of [0, 1] as const) {
        const held = connection.directions[side].held.splice(0);
        for (const line of held) this.#deliver(connection, side, line);
      }
    }
  }

  #deliver(connection: Connection, side: Side, line: string): void {
    const from = connection.hosts[side];
    const toSide: Side = side === 0 ? 1 : 0;
    const to = connection.hosts[toSide];
    const direction = connection.directions[side];
    const at = Math.max(this.#scheduler.now + this.#latency(from, to), direction.lastAt);
    direction.lastAt = at;
    this.#scheduler.at(at, () => {
      if (connection.gone[toSide]) return;
      this.#defer(connection, toSide, () => {
        if (!connection.gone[toSide]) connection.ends[toSide]?.onLine(line);
      });
    });
  }

  /** Runs `work` on `side`'s host, unless that host's process is no longer the one that joined. */
  #defer(connection: Connection, side: Side, work: () => void): void {
    const host = this.host(connection.hosts[side]);
    if (host.generation !== connection.generations[side]) return;
    host.defer(() => {
      if (host.generation === connection.generations[side]) work();
    });
  }

  #latency(from: string, to: string): number {
    return 0.2 + this.#rng.float() * 0.8 + (this.#extraDelay.get(`${from}>${to}`) ?? 0);
  }
}
