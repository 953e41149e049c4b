"""A small TCP balancer on 127.0.0.1 for drills: each client connection goes to the next
backend in turn (round-robin), and a backend that refuses the connection is skipped for the
one after it, so when a server dies the others take its traffic. Bytes are copied both ways
unchanged; when either side closes or fails, both are closed (a client that was waiting on a
killed server sees its connection drop, as behind a real proxy)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter


class Balancer:
    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = list(backends)
        self.turn = 0
        self.served: Counter[tuple[str, int]] = Counter()  # connections each backend took
        self.refused: Counter[tuple[str, int]] = Counter()  # connections each backend refused
        self.unserved = 0  # client connections no backend took
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Balancer:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        # This connection's turn, then the backends after it. The shared counter is read once:
        # other connections move it while this one waits on a connect, and reading it again
        # could pick the refusing backend twice and never the live one.
        first = self.turn
        self.turn += 1
        for step in range(len(self.backends)):
            backend = self.backends[(first + step) % len(self.backends)]
            try:
                upstream = await asyncio.open_connection(*backend)
            except OSError:
                self.refused[backend] += 1
                continue
            self.served[backend] += 1
            return upstream
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._pipes.add(task)
        try:
            upstream = await self._connect()
            if upstream is None:
                self.unserved += 1
                return
            up_reader, up_writer = upstream
            copies = [
                asyncio.create_task(_copy(reader, up_writer)),
                asyncio.create_task(_copy(up_reader, writer)),
            ]
            try:
                await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for copy in copies:
                    copy.cancel()
                await asyncio.gather(*copies, return_exceptions=True)
                up_writer.close()
        finally:
            writer.close()
            self._pipes.discard(task)


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await source.read(65536):
            target.write(chunk)
            await target.drain()
