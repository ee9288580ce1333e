"""A physics-diagrams workspace over generated PhysAlign problems, built through the real CLI
(generate, compile, export with the project, items import, audit import-table, finalize),
for the request and SIMULATED-profile tests. The targets are the generator's (known by
construction), exported ``--unverified``; the diagrams and views are the compiler's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from truthline.cli import app
from truthline.project import Project
from truthline.systems.physalign import compile_release, generate
from truthline.workspace import Workspace


@dataclass(frozen=True)
class ProbeWorkspace:
    ws: Workspace
    project: Project
    release: Path
    export: dict[str, Any]
    public: dict[str, dict[str, Any]]
    """probe id -> public record."""
    private: dict[str, dict[str, Any]]
    """probe id -> private record."""


def build(root: Path, n: int, seed: int) -> ProbeWorkspace:
    """``n`` generated problems (seed ``seed``) compiled, exported and finalized as gold."""
    generate(n, seed, root / "gen")
    release = root / "release"
    compile_release(root / "gen" / "annotations.jsonl", release, seed=seed)
    runner = CliRunner()
    env = {"TRUTHLINE_WORKSPACE": str(root / "ws")}

    def ok(*args: str) -> str:
        res = runner.invoke(app, list(args), env=env)
        assert res.exit_code == 0, f"{args}: {res.output}"
        return res.output

    ok("init", "physics-diagrams")
    exp = json.loads(
        ok("physalign", "export", "--release", str(release), "--unverified", "--project",
           "physics-diagrams", "--json")
    )  # fmt: skip
    ok("items", "import", exp["media"], "--media-root", exp["media_root"],
       "--metadata", exp["metadata"])  # fmt: skip
    ok("audit", "import-table", exp["labels"])
    ok("audit", "finalize")
    ws = Workspace.from_env(root / "ws")

    def records(name: str) -> dict[str, dict[str, Any]]:
        lines = (release / name).read_text(encoding="utf-8").splitlines()
        return {r["probe_id"]: r for r in map(json.loads, lines)}

    return ProbeWorkspace(
        ws=ws,
        project=ws.project("physics-diagrams"),
        release=release,
        export=exp,
        public=records("public/probes.jsonl"),
        private=records("private/targets.jsonl"),
    )
