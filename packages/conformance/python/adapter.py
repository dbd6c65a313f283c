"""The conformance adapter for lock_client.py: adapter-protocol commands (one JSON object per line) on
stdin, each run as it arrives without waiting for earlier ones, replies on stdout as they settle.
See packages/conformance/README.md, "The adapter protocol". Run: python3 adapter.py
"""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lock_client import LockClient, LockError, ServerRefused  # noqa: E402


class Adapter:
    def __init__(self):
        self.client = None
        self.locks = {}
        self.next_lock = 1

    def _holding(self, lock):
        if lock is None:
            return {"ok": False, "code": "busy"}
        handle = str(self.next_lock)
        self.next_lock += 1
        self.locks[handle] = lock
        return {"ok": True, "lock": handle, "token": str(lock.token)}

    async def run(self, command):
        op = command.get("op")
        if op == "config":
            self.client = LockClient(command["servers"])
            return {"ok": True}
        if op == "acquire":
            return self._holding(await self.client.acquire(command["key"], command["leaseMs"], command["waitMs"]))
        if op == "tryAcquire":
            return self._holding(await self.client.try_acquire(command["key"], command["leaseMs"]))
        if op == "extend":
            await self.client.extend(self.locks[command["lock"]], command["leaseMs"])
            return {"ok": True}
        if op == "release":
            return {"ok": True, "released": await self.client.release(self.locks[command["lock"]])}
        if op == "close":
            if self.client is not None:
                await self.client.close()
            return {"ok": True}
        return {"ok": False, "code": "unsupported", "message": f"unknown op {op}"}

    async def answer(self, command):
        try:
            reply = await self.run(command)
        except ServerRefused as error:
            reply = {"ok": False, "code": error.code, "serverCode": error.server_code, "message": str(error)}
        except LockError as error:
            reply = {"ok": False, "code": error.code, "message": str(error)}
        except Exception as error:  # noqa: BLE001 - the runner shows it; the adapter keeps serving
            reply = {"ok": False, "code": "internal", "message": repr(error)}
        sys.stdout.write(json.dumps({"id": command["id"], **reply}) + "\n")
        sys.stdout.flush()


async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    adapter = Adapter()
    tasks = set()
    while line := await reader.readline():
        task = asyncio.ensure_future(adapter.answer(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks)


if __name__ == "__main__":
    asyncio.run(main())
