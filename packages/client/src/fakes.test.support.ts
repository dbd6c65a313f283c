import type { Reply, Request } from "@lock/protocol";
import { vi } from "vitest";
import { type Connection, type ReplyHandler, Ticket } from "./connection.js";
import type { LockLostError } from "./errors.js";
import type { Lock, LockBackend } from "./lock.js";
import { TimerQueue } from "./timers.js";
import type { Router } from "./transport.js";

/**
 * Test doubles for the pure parts: a TimerQueue on vitest's fake clock, and a Router that records
 * what was sent and lets the test answer, drop or redirect each request by hand.
 */

/** A TimerQueue driven by vitest fake timers; call `vi.useFakeTimers()` first. */
export function fakeTimers(): TimerQueue {
  return new TimerQueue({ now: () => Date.now() });
}

export interface Sent {
  readonly ticket: Ticket;
  readonly request: Request;
  /** Which fake connection carried it. */
  readonly connection: number;
  readonly address: string | undefined;
}

export class FakeRouter implements Router {
  size = 2;
  /** False: `send` finds no connection at all. */
  available = true;
  lastError: Error | undefined;
  readonly sent: Sent[] = [];
  readonly withdrawn: Ticket[] = [];
  readonly redirects: Array<{ from: number; to: string }> = [];
  readonly drained: Ticket[] = [];
  /** Calls of `send`, whether or not they found a connection. */
  attempts = 0;
  #nextConnection = 0;

  send(request: Request, handler: ReplyHandler, address?: string): Ticket | undefined {
    this.attempts += 1;
    if (!this.available) return undefined;
    const ticket = new Ticket(request, handler, address);
    ticket.writtenAt = Date.now();
    ticket.state = "written";
    const connection = this.#nextConnection++ % this.size;
    this.sent.push({ ticket, request, connection, address });
    return ticket;
  }

  sendAlongside(ticket: Ticket, request: Request, handler: ReplyHandler): Ticket | undefined {
    const on = this.sent.find((sent) => sent.ticket === ticket);
    if (on === undefined) return undefined;
    const companion = new Ticket(request, handler, on.address);
    this.sent.push({ ticket: companion, request, connection: on.connection, address: on.address });
    return companion;
  }

  /** Tickets marked `queued` by the test can be withdrawn, as a connection would allow. */
  withdraw(ticket: Ticket): boolean {
    if (ticket.state !== "queued") return false;
    ticket.state = "withdrawn";
    this.withdrawn.push(ticket);
    return true;
  }

  redirected(ticket: Ticket, address: string): void {
    const from = this.sent.find((sent) => sent.ticket === ticket)?.connection ?? -1;
    this.redirects.push({ from, to: address });
  }

  served(): void {}

  /** Requests pausing between actives, with the node that cannot wake them. */
  readonly waiting = new Map<() => void, string | undefined>();

  whenActive(wake: () => void, notAddress: string | undefined): { cancel(): void } {
    this.waiting.set(wake, notAddress);
    return { cancel: () => this.waiting.delete(wake) };
  }

  /** The node at `address` turned out to be the active: wake what it may wake. */
  activeFound(address: string): void {
    for (const [wake, notAddress] of [...this.waiting]) {
      if (notAddress === address) continue;
      this.waiting.delete(wake);
      wake();
    }
  }

  draining(ticket: Ticket): void {
    this.drained.push(ticket);
  }

  last(): Sent {
    const sent = this.sent.at(-1);
    if (sent === undefined) throw new Error("nothing was sent");
    return sent;
  }

  reply(sent: Sent, reply: Reply): void {
    sent.ticket.state = "answered";
    sent.ticket.handler.onReply(reply, sent.ticket);
  }

  lose(sent: Sent, written = true, error?: Error): void {
    sent.ticket.state = "dropped";
    sent.ticket.handler.onLost(sent.ticket, written, error);
  }

  /** The written request's connection was dropped because another node claimed the active role. */
  supersede(sent: Sent, error = new Error("silent; another node is the active")): void {
    sent.ticket.connection = { superseded: true } as Connection;
    this.lose(sent, true, error);
  }
}

interface PendingExtend {
  readonly leaseMs: number;
  readonly untilMs: number;
  resolve(writtenAt: number | false): void;
  reject(error: Error): void;
}

/** A backend whose extensions and releases the test answers by hand. */
export class FakeBackend implements LockBackend {
  readonly timers = fakeTimers();
  readonly extends: PendingExtend[] = [];
  readonly releases: Array<(error: Error | undefined, released: boolean) => void> = [];
  readonly lostErrors: LockLostError[] = [];

  extend(_key: string, _token: bigint, leaseMs: number, untilMs: number): Promise<number | false> {
    return new Promise((resolve, reject) => this.extends.push({ leaseMs, untilMs, resolve, reject }));
  }

  release(_lock: Lock, done: (error: Error | undefined, released: boolean) => void): void {
    this.releases.push(done);
  }

  lost(_lock: Lock, error: LockLostError): void {
    this.lostErrors.push(error);
  }

  /** Confirms the oldest pending extension as written now. */
  confirmExtend(): void {
    this.extends.shift()!.resolve(this.timers.clock.now());
  }
}

export function advance(ms: number): void {
  vi.advanceTimersByTime(ms);
}
