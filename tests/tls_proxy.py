"""A TLS-terminating forwarder on 127.0.0.1 for the tests: asyncio + ssl on its own thread,
in front of a plain-HTTP server (pytps.Emulator). Each TLS connection gets its own upstream
connection; bytes are copied both ways until either side closes."""

from __future__ import annotations

import asyncio
import ssl
import threading


class TlsProxy:
    """with TlsProxy(upstream_port, server_ssl_context) as proxy: https://127.0.0.1:{proxy.port}"""

    def __init__(self, upstream_port: int, context: ssl.SSLContext) -> None:
        self.upstream_port = upstream_port
        self.context = context
        self.server_names: list[str | None] = []  # SNI of each handshake, as the server saw it
        self.connections = 0
        self.port = 0
        context.sni_callback = self._on_sni
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _on_sni(self, sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.server_names.append(name)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.context, ssl_handshake_timeout=10))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer)),
                 asyncio.ensure_future(self._pump(up_reader, writer))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the proxy is shutting down
        finally:
            for p in pumps:
                p.cancel()
            for w in (up_writer, writer):
                w.close()  # the TLS side sends close_notify
            self._tasks.discard(task)

    @staticmethod
    async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, ssl.SSLError, OSError):
            pass

    def __enter__(self) -> TlsProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the TLS proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        async def shut() -> None:
            assert self._server is not None
            self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
