"""Requests to the endpoint that are not measured: listing its models before a run.

They go through the standard library with the run's trust settings (--ca-bundle, --insecure),
never through a transport, so no transport has to hold another and a user's own Transport only
has to stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytps.errors import EndpointError
from pytps.measure.redact import Redactor
from pytps.serve_process.facts import in_daemon_thread, ssl_context
from pytps.transport.base_url import BaseUrl
from pytps.transport.network import proxy_for, tls_hint
from pytps.workload import request_formats

if TYPE_CHECKING:
    import ssl

# A models list larger than this is not what pytps asked for.
MAX_JSON_BYTES = 16 << 20


class Endpoint:
    """The base URL, its headers and trust settings, for one-off JSON requests."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: dict[str, str],
        secrets: Sequence[str] = (),
        ca_file: str | None = None,
        verify: bool = True,
        timeout_s: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self._redact = Redactor(secrets)
        self._ca_file = ca_file
        self._verify = verify
        self._timeout_s = timeout_s

    async def get_json(self, path: str) -> tuple[int, Any]:
        """(status, parsed JSON body or None) of a GET. The standard library's http.client, in a
        thread: one small request does not justify importing an HTTP stack (httpx alone costs
        ~0.1 s of CPU at start-up, which a harness calling pytps.run in a loop pays each time)."""
        if proxy_for(self.base_url) is not None:
            return await self._get_json_via_proxy(path)
        return await in_daemon_thread(self._get_json, path)

    async def _get_json_via_proxy(self, path: str) -> tuple[int, Any]:
        # httpx honours HTTP_PROXY, ALL_PROXY and NO_PROXY as the httpx transport does.
        import httpx

        verify: Any = self._ssl_context() if BaseUrl.parse(self.base_url).tls else True
        url = BaseUrl.parse(self.base_url)
        async with httpx.AsyncClient(verify=verify, timeout=self._timeout_s) as client:
            resp = await client.get(url.url(path), headers={**self.headers, **url.auth_for(self.headers)})
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, None

    def _get_json(self, path: str) -> tuple[int, Any]:
        import http.client
        import json

        url = BaseUrl.parse(self.base_url)
        port = url.port
        conn: http.client.HTTPConnection
        if url.tls:
            conn = http.client.HTTPSConnection(url.host, port, timeout=self._timeout_s, context=self._ssl_context())
        else:
            conn = http.client.HTTPConnection(url.host, port, timeout=self._timeout_s)
        headers = {"Accept": "application/json", **self.headers, **url.auth_for(self.headers)}
        try:
            conn.request("GET", url.target(path), headers=headers)
            resp = conn.getresponse()
            body = resp.read(MAX_JSON_BYTES + 1)
        finally:
            conn.close()
        if len(body) > MAX_JSON_BYTES:
            return resp.status, None
        try:
            return resp.status, json.loads(body)
        except ValueError:
            return resp.status, None

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl_context((self._ca_file or True) if self._verify else False)

    async def first_model(self, api: str) -> str:
        """The first model the endpoint lists; EndpointError (one line, with the fix) when it cannot tell."""
        path = request_formats.models_path(api)
        try:
            status, body = await self.get_json(path)
        except Exception as exc:
            hint = tls_hint(exc)
            advice = (
                f"the server's TLS certificate was not accepted: {hint}"
                if hint
                else "is the server running? Check --base-url"
            )
            raise EndpointError(
                self._redact(f"cannot reach {self.base_url} ({type(exc).__name__}: {exc}); {advice}")
            ) from None
        if status in (401, 403):
            raise EndpointError(
                self._redact(
                    f"{self.base_url}{path} answered {status}: the API key was refused; "
                    "set --api-key-env to the variable that holds a valid key"
                )
            )
        models = request_formats.parse_models(api, body, self._redact) if status == 200 and body is not None else []
        if not models and path != "/v1/models":
            # Ollama also serves the OpenAI-compatible list.
            status, body = await self.get_json("/v1/models")
            models = (
                request_formats.parse_models("openai-chat", body, self._redact)
                if status == 200 and body is not None
                else []
            )
        if not models:
            raise EndpointError(
                self._redact(f"could not list models at {self.base_url}{path} (HTTP {status}); name one with --model")
            )
        return models[0]
