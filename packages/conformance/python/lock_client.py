"""A minimal lockd client in Python (3.11+, standard library only), written from docs/protocol.md,
"Writing a client", to show that the section is enough and to run the conformance suite against a
second implementation. Each rule it follows names its subsection there.

Left out, as the section allows: TLS, auth tokens, keepalive pings, the silence watch for a stalled
active, role probes (`I`) while waiting, abort, and the extension of a late grant before handing it out.
"""

import asyncio
import math
import secrets
import socket
import time

RETRY_INTERVAL = 0.2  # pause between retries, and least time between two connects of one slot
RECONNECT_INTERVAL = 3.0
CONNECT_TIMEOUT = 5.0
RELEASE_WINDOW = 5.0
REPLY_GRACE = 2.0
MAX_REDIRECTS = 5
MAX_KEY_BYTES = 1024
MAX_DURATION_MS = 9_999_999_999_999
# `E ? - <code>` after which lockd closes the connection ("Matching replies", rule 5).
CLOSING_CODES = {"IDLE_TIMEOUT", "AUTH_TIMEOUT", "TOO_MANY_CONNECTIONS", "TOO_MANY_UNAUTHENTICATED", "SHUTTING_DOWN"}


class LockError(Exception):
    """What a call fails with; `code` is its adapter-protocol code."""

    code = "internal"


# fmt: off
class LockTimeout(LockError): code = "timeout"  # noqa: E701
class LockLost(LockError): code = "lost"  # noqa: E701
class NoServer(LockError): code = "no_server"  # noqa: E701
class ProtocolViolation(LockError): code = "protocol"  # noqa: E701
class ClientClosed(LockError): code = "closed"  # noqa: E701
class InvalidArgument(LockError): code = "invalid_argument"  # noqa: E701
# fmt: on


class ServerRefused(LockError):
    code = "server_error"

    def __init__(self, server_code, message):
        super().__init__(f"{server_code}: {message}")
        self.server_code = server_code


class Lost(Exception):
    """The connection closed before the request was answered. `written_at`: when it was written (it
    may have taken effect), or None if it never was."""

    def __init__(self, written_at):
        super().__init__("connection closed")
        self.written_at = written_at


class Unreachable(Exception):
    """No connection to the address the request must go to (a redirect's target, or any node)."""


def seconds(ms):
    """Integer milliseconds as the protocol's decimal seconds: 250 -> "0.25"."""
    whole, frac = divmod(ms, 1000)
    return str(whole) if frac == 0 else f"{whole}.{frac:03d}".rstrip("0")


KEYED = {"A", "T", "Y", "N", "R", "X", "C"}


class Reply:
    """One reply line: its kind, the verb it answers, key, id, and the remaining fields."""

    ID_FIELD = {"A": 3, "T": 2, "Y": 3, "N": 2, "M": 4, "E": 4}

    def __init__(self, line):
        f = line.split(" ")
        self.kind, self.fields = f[0], f
        if self.kind in ("M", "E"):
            self.verb, self.key = f[1], f[2]
        else:
            self.verb = {"T": "A", "N": "Y"}.get(self.kind, self.kind)
            self.key = f[1] if self.kind in KEYED and len(f) > 1 else "-"
        at = self.ID_FIELD.get(self.kind)
        self.id = f[at] if at is not None and len(f) > at and f[at] != "-" else None
        if self.kind == "E":
            self.code, self.message = f[3], " ".join(f[5:])


class Request:
    def __init__(self, verb, key, rid, line):
        self.verb, self.key, self.id, self.line = verb, key, rid, line
        self.future = asyncio.get_running_loop().create_future()
        self.written_at = None


class Connection:
    """One socket to one node: writes requests, matches replies ("Matching replies")."""

    def __init__(self, reader, writer, on_late_grant):
        self.reader, self.writer = reader, writer
        self.acquires = {}  # A requests by id: only a waiting A is answered out of order
        self.others = []  # every other request, in send order
        self.closed = False
        self.on_late_grant = on_late_grant
        self.task = asyncio.ensure_future(self._read())

    def send(self, request):
        if self.closed:
            raise Lost(None)
        if request.verb == "A" and request.id is not None:
            self.acquires[request.id] = request
        else:
            self.others.append(request)
        request.written_at = time.monotonic()
        self.writer.write(request.line.encode() + b"\n")

    def _match(self, reply):
        if reply.verb == "A":
            if reply.id is not None:
                return self.acquires.pop(reply.id, None)
            for rid, request in self.acquires.items():
                if request.key == reply.key:
                    return self.acquires.pop(rid)
            return None
        for field, value in (("id", reply.id), ("key", reply.key)):
            if value is None:
                continue
            for i, request in enumerate(self.others):
                if request.verb == reply.verb and getattr(request, field) == value:
                    return self.others.pop(i)
        return None

    async def _read(self):
        try:
            while True:
                raw = await self.reader.readline()
                if not raw.endswith(b"\n"):
                    break
                reply = Reply(raw.decode().rstrip("\r\n"))
                if reply.kind == "E" and reply.verb == "?":
                    if reply.code in CLOSING_CODES:
                        continue  # the server closes the connection next
                    break  # a line lockd could not read: a protocol error, drop the connection
                request = self._match(reply)
                if request is None:
                    break
                if request.future.done():  # the call ended already: a late grant must be released
                    if reply.kind in ("A", "Y"):
                        self.on_late_grant(reply.key, int(reply.fields[2]), request.id)
                else:
                    request.future.set_result(reply)
        except (OSError, UnicodeDecodeError, IndexError, ValueError):
            pass
        self.close()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.writer.close()
        for request in [*self.acquires.values(), *self.others]:
            if not request.future.done():
                request.future.set_exception(Lost(request.written_at))
        self.acquires.clear()
        self.others.clear()


class Slot:
    def __init__(self, address):
        self.address = address
        self.conn = None
        self.connecting = None  # the connect task while one runs
        self.standby = False  # it redirected us: prefer other nodes
        self.draining = False  # it said SHUTTING_DOWN
        self.last_attempt = -math.inf
        self.next_connect = 0.0

    @property
    def ready(self):
        return self.conn is not None and not self.conn.closed and not self.draining


class Lock:
    def __init__(self, key, token, rid, lease_ms, expires_at):
        self.key, self.token, self.id, self.lease_ms, self.expires_at = key, token, rid, lease_ms, expires_at
        self.release_task = None


class LockClient:
    def __init__(self, servers):
        # "Connections": one per address, two to a single address.
        self.slots = [Slot(a) for a in (servers * 2 if len(servers) == 1 else servers)]
        self.cursor = 0
        self.prefix = f"p{secrets.token_hex(8)}"
        self.counter = 0
        self.held = set()
        self.closed = False
        self.background = set()
        self.reconnector = asyncio.ensure_future(self._reconnect_loop())

    # -- connections ---------------------------------------------------------------------------

    async def _reconnect_loop(self):
        while True:
            now = time.monotonic()
            for slot in self.slots:
                if slot.conn is None and slot.connecting is None and slot.next_connect <= now:
                    self._connect(slot)
            await asyncio.sleep(0.05)

    def _connect(self, slot):
        slot.last_attempt = time.monotonic()
        slot.connecting = asyncio.ensure_future(self._open(slot))
        return slot.connecting

    async def _open(self, slot):
        host, _, port = slot.address.rpartition(":")
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), CONNECT_TIMEOUT)
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            slot.conn = Connection(reader, writer, self._release_unwanted)
            slot.standby = slot.draining = False
            slot.conn.task.add_done_callback(lambda _: self._down(slot))
        except (OSError, asyncio.TimeoutError):
            slot.next_connect = time.monotonic() + RECONNECT_INTERVAL
        finally:
            slot.connecting = None

    def _down(self, slot):
        slot.conn, slot.draining = None, False
        slot.next_connect = time.monotonic() + RECONNECT_INTERVAL

    def _pick(self, address=None):
        """Round-robin over ready slots (of `address`), nodes that redirected us last."""
        n = len(self.slots)
        best = None
        for step in range(n):
            slot = self.slots[(self.cursor + step) % n]
            if slot.ready and address in (None, slot.address) and (best is None or best.standby and not slot.standby):
                best = slot
        if best is not None:
            self.cursor = (self.slots.index(best) + 1) % n
        return best

    async def _connection(self, address):
        """A ready slot, opening connections that are down (at most once per RETRY_INTERVAL each)."""
        slot = self._pick(address)
        if slot is not None:
            return slot
        if address is not None and not any(s.address == address for s in self.slots):
            self.slots.append(Slot(address))  # a redirect may name an address we were not given
        now = time.monotonic()
        attempts = []
        for s in self.slots:
            if address not in (None, s.address) or s.conn is not None:
                continue
            if s.connecting is None and now - s.last_attempt >= RETRY_INTERVAL:
                self._connect(s)
            if s.connecting is not None:
                attempts.append(s.connecting)
        for attempt in asyncio.as_completed(attempts):
            await attempt
            slot = self._pick(address)
            if slot is not None:
                return slot
        raise Unreachable()

    async def _exchange(self, verb, key, rid, line, address=None):
        slot = await self._connection(address)
        request = Request(verb, key, rid, line)
        slot.conn.send(request)
        reply = await request.future
        if reply.kind == "M":
            slot.standby = True
        elif reply.kind == "E" and reply.code == "SHUTTING_DOWN":
            slot.draining = True
        elif reply.kind != "E":
            slot.standby = False  # it answered itself: it serves now
        return reply, request

    # -- acquire ("Acquiring: ids, waits and retries", "Redirects") ----------------------------

    def _next_id(self):
        self.counter += 1
        return f"{self.prefix}.{self.counter:x}.{secrets.token_hex(8)}"

    async def acquire(self, key, lease_ms, wait_ms):
        return await self._acquire("A", key, lease_ms, wait_ms)

    async def try_acquire(self, key, lease_ms):
        """The lock, or None if the key is held or queued for."""
        return await self._acquire("Y", key, lease_ms, 0)

    async def _acquire(self, verb, key, lease_ms, wait_ms):
        if self.closed:
            raise ClientClosed("the client is closed")
        check_key(key)
        check_ms(lease_ms, 1)
        check_ms(wait_ms, 0)
        call = {"id": self._next_id(), "lost_write": False, "first_write": None}
        deadline = time.monotonic() + wait_ms / 1000 if wait_ms > 0 else None
        attempts = self._attempts(verb, key, lease_ms, deadline, call)
        try:
            if deadline is None:
                return await attempts
            return await asyncio.wait_for(attempts, deadline + REPLY_GRACE - time.monotonic())
        except (LockError, asyncio.TimeoutError) as error:
            if call["lost_write"]:
                self._spawn(self._release_if_granted(key, call["id"]))
            if isinstance(error, LockError):
                raise
            raise LockTimeout(f"no answer for {key} within the wait") from None

    async def _attempts(self, verb, key, lease_ms, deadline, call):
        rid, tries, redirects, target = call["id"], 0, 0, None
        while True:
            if verb == "Y":
                line = f"Y {key} {seconds(lease_ms)} {rid}"
            else:  # the wait left, never 0 (forever) for a bounded wait
                left = 0 if deadline is None else max(1, math.ceil((deadline - time.monotonic()) * 1000))
                line = f"A {key} {seconds(lease_ms)} {seconds(left)} {rid}"
            try:
                reply, request = await self._exchange(verb, key, rid, line, target)
            except Lost as lost:
                if lost.written_at is not None:
                    call["lost_write"] = True
                    call["first_write"] = call["first_write"] or lost.written_at
                if lost.written_at is not None and target is not None:
                    target = None  # the redirect's target died while we waited there: not a try
                    continue
                if target is None:
                    tries += 1
                    if tries >= len(self.slots):
                        raise NoServer(f"no usable connection for {key} after {tries} tries") from None
                    continue
                reply = None  # the target could not be reached: back off below
            except Unreachable:
                if target is None:
                    raise NoServer(f"no connection could be opened for {key}") from None
                reply = None
            if reply is not None and call["first_write"] is None:
                call["first_write"] = request.written_at
            if reply is None or reply.kind == "E" and reply.code == "NO_ACTIVE":
                redirects, target = 0, None
                if deadline is not None and time.monotonic() + RETRY_INTERVAL >= deadline:
                    raise LockTimeout(f"no active node answered for {key} within the wait")
                await asyncio.sleep(RETRY_INTERVAL)
            elif reply.kind in ("A", "Y"):
                lock = Lock(key, int(reply.fields[2]), rid, lease_ms, call["first_write"] + lease_ms / 1000)
                self.held.add(lock)
                return lock
            elif reply.kind == "T":
                call["lost_write"] = False  # the id's outcome is known: nothing granted
                raise LockTimeout(f"the wait for {key} ran out")
            elif reply.kind == "N":
                return None
            elif reply.kind == "M":
                redirects += 1
                if redirects > MAX_REDIRECTS:
                    raise ProtocolViolation(f"more than {MAX_REDIRECTS} redirects for {key}")
                target = reply.fields[3]
            elif reply.kind == "E" and reply.code == "SHUTTING_DOWN":
                tries += 1
                if tries >= len(self.slots):
                    raise NoServer(f"no usable connection for {key} after {tries} tries")
                target = None
            elif reply.kind == "E":
                raise ServerRefused(reply.code, reply.message)
            else:
                raise ProtocolViolation(f"unexpected reply {reply.kind} to {verb}")

    # -- release and extend ("Release and extend") ---------------------------------------------

    async def _retrying(self, verb, key, rid, line, until):
        """Sends an idempotent request until a definitive reply or `until`. Returns the reply, the
        request that got it, and when a first attempt whose reply was lost had been written."""
        target, redirects, lost_write, retried_at_once = None, 0, None, False
        while True:
            try:
                reply, request = await self._exchange(verb, key, rid, line, target)
            except Lost as lost:
                if lost_write is None:
                    lost_write = lost.written_at
                target, reply = None, None
                if not retried_at_once:  # the first retry after a dropped connection goes at once
                    retried_at_once = True
                    continue
            except Unreachable:
                target, reply = None, None
            if reply is not None and reply.kind == "M":
                redirects += 1
                if redirects > MAX_REDIRECTS:
                    raise ProtocolViolation(f"more than {MAX_REDIRECTS} redirects for {verb} {key}")
                target = reply.fields[3]
                continue
            if reply is not None and not (reply.kind == "E" and reply.code in ("NO_ACTIVE", "SHUTTING_DOWN")):
                if reply.kind == "E":
                    raise ServerRefused(reply.code, reply.message)
                return reply, request, lost_write
            redirects, target = 0, None
            if time.monotonic() + RETRY_INTERVAL > until:
                raise NoServer(f"no node answered {verb} {key} in time")
            await asyncio.sleep(RETRY_INTERVAL)

    async def release(self, lock):
        """True if the lock still held the key, False if it had gone. Idempotent."""
        if lock.release_task is None:
            lock.release_task = asyncio.ensure_future(self._release(lock))
        return await asyncio.shield(lock.release_task)

    async def _release(self, lock):
        self.held.discard(lock)
        line = f"R {lock.key} {lock.token} {lock.id}"
        reply, _, lost_write = await self._retrying("R", lock.key, lock.id, line, time.monotonic() + RELEASE_WINDOW)
        # `R key 0` after a lost attempt most likely means that attempt released it.
        return reply.fields[2] == "1" or (lost_write is not None and lost_write < lock.expires_at)

    async def extend(self, lock, lease_ms):
        check_ms(lease_ms, 1)
        line = f"X {lock.key} {lock.token} {seconds(lease_ms)} {lock.id}"
        until = max(time.monotonic(), lock.expires_at)
        reply, request, _ = await self._retrying("X", lock.key, lock.id, line, until)
        if reply.fields[2] != "1":
            raise LockLost(f"the server refused to extend {lock.key}")
        lock.expires_at = max(lock.expires_at, request.written_at + lease_ms / 1000)

    # -- late grants and orphans ("Leases and late grants") ------------------------------------

    def _spawn(self, coroutine):
        task = asyncio.ensure_future(coroutine)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def _release_unwanted(self, key, token, rid):
        line = f"R {key} {token} {rid}"
        self._spawn(self._quietly(self._retrying("R", key, rid, line, time.monotonic() + RELEASE_WINDOW)))

    async def _release_if_granted(self, key, rid):
        """A lost attempt may have left a grant for `rid`: `Y` with the same id finds it."""
        line = f"Y {key} 0.001 {rid}"
        result = await self._quietly(self._retrying("Y", key, rid, line, time.monotonic() + RELEASE_WINDOW))
        if result is not None and result[0].kind == "Y":
            self._release_unwanted(key, int(result[0].fields[2]), rid)

    @staticmethod
    async def _quietly(coroutine):
        try:
            return await coroutine
        except LockError:
            return None

    async def close(self):
        """Releases what is held, lets background work finish (within the release window), closes."""
        if self.closed:
            return
        self.closed = True
        await asyncio.gather(*(self.release(lock) for lock in list(self.held)), return_exceptions=True)
        if self.background:
            await asyncio.wait(list(self.background), timeout=RELEASE_WINDOW)
        self.reconnector.cancel()
        for slot in self.slots:
            if slot.conn is not None:
                slot.conn.close()


def check_key(key):
    raw = key.encode() if isinstance(key, str) else b""
    if not 0 < len(raw) <= MAX_KEY_BYTES or any(c <= 0x20 or c == 0x7F for c in raw):
        raise InvalidArgument(f"bad key {key!r}")


def check_ms(ms, least):
    if not isinstance(ms, int) or isinstance(ms, bool) or not least <= ms <= MAX_DURATION_MS:
        raise InvalidArgument(f"a duration must be whole milliseconds from {least}, got {ms!r}")
