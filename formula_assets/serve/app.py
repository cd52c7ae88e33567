"""The ASGI application: the JSON API and the pages, over the published snapshot.

FastAPI (on uvicorn, which the Dagster web server already brings): typed query parameters
checked before any code of ours runs, OpenAPI docs at `/docs`. An answer is a few
milliseconds of CPU, so each is computed on the event loop at once, not handed to a thread
pool (threads of one process would wait for each other's GIL); `formula-assets serve` runs a
worker process per core instead. Every answer is JSON or a static page; nothing is
written anywhere; every LaTeX or MathML query goes through the hardened parser; formulae leave
as MathML rebuilt from MathML elements only (`syntax.display`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from formula_assets.search.meaning import SearchError
from formula_assets.search.searcher import MAX_QUERY_CHARS, MAX_TOP
from formula_assets.serve.content import Loaded
from formula_assets.serve.published import Published

STATIC = Path(__file__).resolve().parent / "static"
# the OpenAPI page is Swagger UI vendored under static/swagger-ui (FastAPI's own loads a CDN)
PAGES = {"/": "index.html", "/audit": "audit.html", "/docs": "docs.html"}
MAX_CHARS = max(MAX_QUERY_CHARS.values())
MAX_BODY = 4 * MAX_CHARS  # bytes of a POSTed query (UTF-8, JSON-escaped): more is refused
REPLACEMENT = "\ufffd"  # what a URL's bytes that are no UTF-8 decode to
# pages load only this service's own files; nothing from elsewhere, no inline script
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class Json(Response):
    """A JSON answer serialised by orjson (a search's hits: tens of kilobytes, each time)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _error(status: int, reason: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": reason, "status": status, **more}, status_code=status)


class SearchBody(BaseModel):
    """A query too long for a URL (a MathML formula), as a JSON body."""

    q: str = Field(max_length=MAX_CHARS, description="words, LaTeX or MathML")
    kind: Literal["text", "latex", "mathml"] = "text"
    top: int = Field(default=10, ge=1, le=MAX_TOP)


HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class _Headers:
    """Refuses a body without a length or over the limit before it is read, and adds the
    security headers to every answer. Plain ASGI: Starlette's `BaseHTTPMiddleware` costs
    about a millisecond a request, a tenth of a search's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"content-length"), None
        )
        refusal = None
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            refusal = _error(413, f"a request body is at most {MAX_BODY:,} bytes")
        elif scope["method"] == "POST" and length is None:
            refusal = _error(411, "a request body needs its Content-Length")
        if refusal is not None:
            refusal.headers.raw.extend(HEADERS)
            await refusal(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(published: Published, title: str = "formula_assets") -> FastAPI:
    """The service over `published` (started and stopped with the application)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        published.start()
        try:
            yield
        finally:
            published.stop()

    app = FastAPI(
        title=title,
        lifespan=lifespan,
        default_response_class=Json,
        summary="Wikidata formulae found by names, formula structure and meaning; the "
        "annotation audit for editors.",
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(_Headers)

    def loaded() -> tuple[str, Loaded]:
        snapshot = published.current  # once per request: one version throughout
        return snapshot.version, snapshot.content

    @app.exception_handler(SearchError)
    async def _search_error(request: Request, exc: SearchError) -> JSONResponse:
        return _error(400, str(exc), position=exc.position)

    @app.exception_handler(StarletteHTTPException)  # FastAPI's, and routing's 404 and 405
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "query")
        return _error(400, f"{where}: {first.get('msg', 'invalid')}".strip(": "))

    def answer(q: str, kind: str, top: int) -> Json:
        if REPLACEMENT in q:
            raise SearchError("the query holds bytes that are not UTF-8")
        version, content = loaded()
        return Json({"version": version, **content.search(q, kind, top)})

    @app.get("/api/search", summary="Items found by a text or a formula")
    async def search(
        q: Annotated[str, Query(max_length=MAX_CHARS, description="words, LaTeX or MathML")],
        kind: Annotated[Literal["text", "latex", "mathml"], Query()] = "text",
        top: Annotated[int, Query(ge=1, le=MAX_TOP)] = 10,
    ) -> Json:
        return answer(q, kind, top)

    @app.post("/api/search", summary="The same, the query in a JSON body (MathML is long)")
    async def search_body(body: SearchBody) -> Json:
        return answer(body.q, body.kind, body.top)

    @app.get("/api/items/{qid}", summary="One item: formula, names, concepts, similar formulae")
    async def item(qid: str) -> Json:
        version, content = loaded()
        found = content.item(qid)
        if found is None:
            raise HTTPException(404, f"no formula item {qid[:40]!r} in the published data")
        return Json({"version": version, **found})

    @app.get("/api/audit", summary="The annotation audit's findings, most actionable first")
    async def audit(
        kind: Annotated[str | None, Query(max_length=64)] = None,
        q: Annotated[str | None, Query(max_length=200, description="label or QID")] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Json:
        version, content = loaded()
        return Json({"version": version, **content.audit(kind, q, limit, offset)})

    @app.get("/api/preview", summary="A LaTeX query as the search reads it, rendered")
    async def preview(latex: Annotated[str, Query(max_length=MAX_QUERY_CHARS["latex"])]) -> Any:
        version, content = loaded()
        shown = content.preview(latex)
        if "error" in shown:
            return _error(400, shown["error"], position=shown.get("position"))
        return {"version": version, **shown}

    @app.get("/api/health", summary="The published version served and what it holds")
    async def health() -> dict[str, Any]:
        snapshot = published.current
        return {
            "version": snapshot.version,
            "loaded_at": snapshot.loaded_at,
            "failed_loads": published.failures,
            **snapshot.content.summary(),
        }

    def page(name: str) -> Callable[[], FileResponse]:
        def serve_page() -> FileResponse:
            return FileResponse(STATIC / name, media_type="text/html")

        return serve_page

    for route, name in PAGES.items():
        app.get(route, include_in_schema=False)(page(name))
    app.get("/item/{qid}", include_in_schema=False)(
        lambda qid: FileResponse(STATIC / "item.html", media_type="text/html")
    )
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
