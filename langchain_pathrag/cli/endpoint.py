"""HTTP clients for the OpenAI-compatible endpoint that give up at once on a refused connection.

The ``openai`` SDK retries a failed connection with back-off (two retries by default) before it says
``Connection error.``: seconds spent on a URL where nothing listens (a wrong ``OPENAI_BASE_URL``, a local
server not started), and the message does not say which URL. The transports here turn a refused
connection into the SDK's own :class:`openai.APIConnectionError`, naming the URL, which the SDK passes on
without retrying; every other failure (a timeout, a reset, a rate limit) is retried as before.
``pathrag.errors.ModelUnreachable`` then carries the URL to the command line's one ``error:`` line.

>>> sorted(fail_fast_clients())
['http_async_client', 'http_client']
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["fail_fast_clients"]

# the openai SDK's own client settings, which a client given to it replaces
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def _refused(error: BaseException) -> bool:
    seen: BaseException | None = error
    for _ in range(16):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _refused_error(request: httpx.Request, error: BaseException) -> Exception:
    import openai

    # the SDK takes httpx's requests as well as its own client's (typed for the latter only)
    return openai.APIConnectionError(message=f"connection refused by {request.url}", request=request)  # type: ignore[arg-type]


class _Transport(httpx.HTTPTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.ConnectError as exc:
            if _refused(exc):
                raise _refused_error(request, exc) from exc
            raise


class _AsyncTransport(httpx.AsyncHTTPTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except httpx.ConnectError as exc:
            if _refused(exc):
                raise _refused_error(request, exc) from exc
            raise


def fail_fast_clients() -> dict[str, Any]:
    """``http_client`` and ``http_async_client`` for ``ChatOpenAI`` (or ``init_chat_model``) that refuse to
    retry a refused connection."""
    return {
        "http_client": httpx.Client(transport=_Transport(limits=_LIMITS), follow_redirects=True),
        "http_async_client": httpx.AsyncClient(transport=_AsyncTransport(limits=_LIMITS), follow_redirects=True),
    }
