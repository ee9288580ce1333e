"""A thin HTTP client for Label Studio's REST API (httpx; the token never appears in errors).

We talk HTTP directly rather than through the SDK: fewer round trips for bulk import, clear
errors for a server that stops answering, and one place that handles legacy tokens and
personal access tokens (JWT refresh tokens, exchanged for a short-lived access token).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from truthline.errors import TruthlineError


class LabelStudioDown(TruthlineError):
    """The server did not answer (refused, reset, timed out)."""


class LabelStudioError(TruthlineError):
    """The server answered with an error status."""

    def __init__(self, message: str, status: int):
        self.status = status
        super().__init__(message)


def _is_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


def item_id_of(raw: Any) -> int | None:
    """Our item id from a task's data (an int, or digits), else None (not our task)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw)
    return None


class LSClient:
    """Label Studio as one user: the admin, or an annotator acting as themself."""

    def __init__(self, url: str, token: str, *, timeout: float = 600):
        if not token:
            raise TruthlineError(
                "no Label Studio API token: start a local server with `truthline annotate serve` "
                "or set LABEL_STUDIO_API_KEY for --url"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TruthlineError(
                f"{url!r} is not the http(s) URL of a Label Studio server "
                "(e.g. http://127.0.0.1:8080)"
            )
        self.url = url.rstrip("/")
        self._token = token
        self._access: str | None = None
        # a long read timeout for exports, a short connect timeout for a host that never answers
        self._http = httpx.Client(
            base_url=self.url, timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0))
        )

    def __repr__(self) -> str:
        return f"LSClient({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LSClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _auth(self) -> dict[str, str]:
        if not _is_jwt(self._token):
            return {"Authorization": f"Token {self._token}"}
        if self._access is None:
            r = self._send("POST", "/api/token/refresh/", {"refresh": self._token}, auth=False)
            self._access = str(self._json(r, "POST", "/api/token/refresh/").get("access"))
        return {"Authorization": f"Bearer {self._access}"}

    def _send(
        self,
        method: str,
        path: str,
        json: Any = None,
        *,
        params: dict[str, Any] | None = None,
        auth: bool = True,
        retry_auth: bool = True,
    ) -> httpx.Response:
        headers = self._auth() if auth else {}
        try:
            r = self._http.request(method, path, json=json, params=params, headers=headers)
        except httpx.TransportError as exc:
            raise LabelStudioDown(
                f"Label Studio at {self.url} is not answering ({type(exc).__name__}) during "
                f"{method} {path}; start it with `truthline annotate serve` and rerun"
            ) from None
        if r.status_code == 401 and auth and retry_auth and _is_jwt(self._token):
            self._access = None  # access token expired: refresh once
            return self._send(method, path, json, params=params, retry_auth=False)
        if r.status_code >= 400:
            detail = r.text[:500].replace(self._token, "***")
            hint = " (check the API token)" if r.status_code in (401, 403) else ""
            raise LabelStudioError(
                f"Label Studio {method} {path}: HTTP {r.status_code}{hint}: {detail}",
                r.status_code,
            )
        return r

    def _json(self, r: httpx.Response, method: str, path: str) -> Any:
        """The body as JSON; an HTML page or garbage means this is not Label Studio's API."""
        try:
            return r.json()
        except ValueError:
            raise LabelStudioError(
                f"{self.url} answered {method} {path} (HTTP {r.status_code}) with something "
                "that is not JSON; is it a Label Studio server?",
                r.status_code,
            ) from None

    def get(self, path: str, **params: Any) -> Any:
        return self._json(self._send("GET", path, params=params or None), "GET", path)

    def post(self, path: str, json: Any = None, **params: Any) -> Any:
        r = self._send("POST", path, json, params=params or None)
        return self._json(r, "POST", path) if r.content else None

    def patch(self, path: str, json: Any) -> Any:
        return self._json(self._send("PATCH", path, json), "PATCH", path)

    def delete(self, path: str) -> None:
        self._send("DELETE", path)

    def raw(self, method: str, path: str, **params: Any) -> httpx.Response:
        return self._send(method, path, params=params or None)

    # -- a few endpoints -------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        return self.get("/api/current-user/whoami")

    def users(self) -> dict[int, str]:
        """User id -> email for every account in the organization."""
        data = self.get("/api/users/", page_size=100000)
        rows = data["results"] if isinstance(data, dict) and "results" in data else data
        return {int(u["id"]): u.get("email") or u.get("username") or str(u["id"]) for u in rows}

    def tasks_by_item(self, ls_project_id: int) -> dict[int, int]:
        """Our item id -> Label Studio task id, read from the tasks' data (for idempotent push)."""
        out: dict[int, int] = {}
        page = 1
        while True:
            try:
                data = self.get(
                    "/api/tasks/",
                    project=ls_project_id,
                    page=page,
                    page_size=1000,
                    fields="all",
                )
            except LabelStudioError as exc:
                if exc.status == 404 and page > 1:  # past the last page
                    break
                raise
            tasks = data.get("tasks", []) if isinstance(data, dict) else data
            for t in tasks:
                item = item_id_of((t.get("data") or {}).get("item_id"))
                if item is not None:  # else a task imported by hand: not ours
                    out[item] = int(t["id"])
            total = data.get("total", 0) if isinstance(data, dict) else 0
            if not tasks or page * 1000 >= total:
                break
            page += 1
        return out

    def snapshot_export(self, ls_project_id: int, *, timeout: float = 3600) -> list[dict]:
        """Every task with its annotations (skips included) and the annotators' emails."""
        base = f"/api/projects/{ls_project_id}/exports"
        snap = self.post(
            f"{base}/",
            {
                "title": "truthline pull",
                "serialization_options": {
                    "drafts": {"only_id": True},
                    "predictions": {"only_id": True},
                    "annotations__completed_by": {"only_id": False},
                },
                # no task filter: "annotated only" drops tasks whose only annotation is a skip
            },
        )
        pk = snap["id"]
        t0 = time.monotonic()
        while snap.get("status") not in ("completed", "failed"):
            if time.monotonic() - t0 > timeout:
                raise TruthlineError(f"export of Label Studio project {ls_project_id} timed out")
            time.sleep(0.3)
            snap = self.get(f"{base}/{pk}")
        if snap["status"] == "failed":
            raise TruthlineError(f"Label Studio failed to export project {ls_project_id}")
        r = self.raw("GET", f"{base}/{pk}/download", exportType="JSON")
        with contextlib.suppress(TruthlineError):
            self.delete(f"{base}/{pk}")
        return self._json(r, "GET", f"{base}/{pk}/download")
