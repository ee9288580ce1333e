"""Annotator accounts that can log in (invite-signup flow), and annotating as a given user.

The SDK's ``users.create`` makes accounts that cannot log in (Community ignores the
password), so accounts are made the way a person would: ``GET /api/invite`` gives a signup
token, then the signup form is posted. Passwords are random, kept in a 0600 JSON file and
never printed unless asked. ``user_client`` logs in as a user and acts with their own token,
so Label Studio records them as ``completed_by``.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import httpx

from truthline._names import MAX_ANNOTATOR, annotator_problem
from truthline.annotate._client import LSClient
from truthline.annotate._labelconfig import values_to_results
from truthline.annotate._server import write_secret
from truthline.errors import TruthlineError

USERS_FILE = "label_studio_users.json"
# local@domain.tld: what Label Studio's signup form accepts, without spaces or a second @
EMAIL = re.compile(
    r"[^@\s\x00-\x1f,;:<>()\[\]\\\"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
)


def _load(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("password"), str) for v in data.values()
    ):
        raise TruthlineError(
            f"{path} is not the annotators' password file truthline writes (a JSON object "
            "email -> {password}); restore it, or move it away and add the annotators again"
        )
    return data


def check_emails(emails: list[str]) -> list[str]:
    """The emails, each checked before any account is made (one bad one stops them all)."""
    if not emails:
        raise TruthlineError("give at least one annotator email")
    for email in emails:
        if len(email) > MAX_ANNOTATOR:  # pull refuses an annotator id longer than that
            raise TruthlineError(f"{annotator_problem(email)}; no account was created")
        if not EMAIL.fullmatch(email):
            raise TruthlineError(
                f"{email!r} is not an email address (name@example.com); no account was created"
            )
    return list(dict.fromkeys(emails))


def _form(session: httpx.Client, url: str, data: dict[str, str]) -> httpx.Response:
    session.get(url)
    csrf = session.cookies.get("csrftoken")
    if not csrf:
        raise TruthlineError(f"Label Studio did not set a CSRF cookie at {url}")
    return session.post(
        url,
        data=data | {"csrfmiddlewaretoken": csrf},
        headers={"Referer": url},
        follow_redirects=False,
    )


def add_users(admin: LSClient, emails: list[str], secrets_file: Path) -> list[dict[str, Any]]:
    """Create login-capable accounts; passwords go to ``secrets_file`` (0600)."""
    emails = check_emails(emails)
    known = _load(secrets_file)
    existing = {e.casefold(): i for i, e in admin.users().items()}
    out = []
    invite = None
    for email in emails:
        if email.casefold() in existing:
            status = "exists" if email in known else "exists (password not in the secrets file)"
            out.append({"email": email, "user_id": existing[email.casefold()], "status": status})
            continue
        if invite is None:
            invite = admin.get("/api/invite")["invite_url"]
        password = secrets.token_urlsafe(12) + "A1!"
        with httpx.Client(base_url=admin.url, timeout=60) as s:
            r = _form(s, f"{admin.url}{invite}", {"email": email, "password": password})
        if r.status_code != 302:
            raise TruthlineError(
                f"Label Studio refused the signup of {email} (HTTP {r.status_code}); "
                "is the invite link still valid?"
            )
        known[email] = {"password": password}
        write_secret(secrets_file, json.dumps(known, indent=2))
        uid = {e.casefold(): i for i, e in admin.users().items()}.get(email.casefold())
        out.append({"email": email, "user_id": uid, "status": "created"})
    return out


def user_token(url: str, email: str, password: str) -> str:
    """Log in through the form and read the user's API token."""
    with httpx.Client(base_url=url, timeout=60) as s:
        r = _form(s, f"{url}/user/login/", {"email": email, "password": password})
        if r.status_code != 302:
            raise TruthlineError(f"cannot log in to {url} as {email}: wrong password or no account")
        tok = s.get("/api/current-user/token")
        if tok.status_code != 200:
            raise TruthlineError(f"cannot read the API token of {email} (HTTP {tok.status_code})")
        return str(tok.json()["token"])


def user_client(url: str, email: str, secrets_file: Path) -> LSClient:
    """A client acting as ``email`` (password from the secrets file written by ``add_users``)."""
    known = _load(secrets_file)
    if email not in known:
        raise TruthlineError(
            f"no password for {email} in {secrets_file}; add them with `annotate users add`"
        )
    entry = known[email]
    token = entry.get("token")
    if not token:
        token = user_token(url, email, entry["password"])
        entry["token"] = token
        write_secret(secrets_file, json.dumps(known, indent=2))
    return LSClient(url, token)


def submit_annotation(
    user_client: LSClient,
    project: Any,
    ls_task_id: int,
    values: dict[str, Any],
    lead_time: float,
    parent_prediction: int | None = None,
    *,
    shown: dict[str, Any] | None = None,
    cancelled: bool = False,
) -> dict[str, Any]:
    """Post an annotation as the client's user: the inverse of the pull conversion.

    ``shown`` (the prediction's values) sets each result's ``origin`` the way the labeling
    UI does: ``prediction`` where the value agrees with it, else ``prediction-changed``;
    without a shown prediction every result is ``manual``. An entity without a box is posted
    as a placeholder square (read back as "no box"): an API post needs some region for it.
    """
    origins: dict[str, str] = {}
    for name, ft in project.field_types.items():
        if name not in values:
            continue
        if shown is None:
            origins[name] = "manual"
        else:
            v, s = ft.normalize(values[name]), shown.get(name)
            same = (v is None and s is None) or (v is not None and s is not None and ft.agree(v, s))
            origins[name] = "prediction" if same else "prediction-changed"
    body: dict[str, Any] = {
        "result": []
        if cancelled
        else values_to_results(project, values, origin=origins, placeholders=True),
        "lead_time": float(lead_time),
        "was_cancelled": cancelled,
    }
    if parent_prediction is not None:
        body["parent_prediction"] = parent_prediction
    return user_client.post(f"/api/tasks/{ls_task_id}/annotations/", body)
