"""The benchmark/audit CLIs around the library: signals and failing endpoints end in their
exit codes with one line, user-supplied names and keys stay inside their folders, output
paths into missing folders just work."""

from __future__ import annotations

import json

from sqlalchemy import func, select
from typer.testing import CliRunner

from truthline.cli import app
from truthline.models import Backend, Completion, backend
from truthline.store import tables

runner = CliRunner()
TRUTH: dict[str, dict] = {}
SENT: list[str] = []
KILL = {"at": 4}


def cli(ws, *args: str):
    return runner.invoke(app, ["--workspace", str(ws.root), *args])


def _answer(truth: dict) -> dict:
    return {
        "worker_count": truth["worker_count"],
        "workers": [
            {k: w[k] for k in ("worker_id", "action", "helmet", "harness", "safety_violation")}
            for w in truth["workers"]
        ],
    }


@backend("glue-sigterm")
class _SigtermOnFourth(Backend):
    """Answers 3 requests, then the process gets a real SIGTERM with requests in flight."""

    async def complete(self, request):
        import asyncio
        import os
        import signal

        SENT.append(request.context["key"])
        if KILL["at"] and len(SENT) == KILL["at"]:
            os.kill(os.getpid(), signal.SIGTERM)
        if KILL["at"] and len(SENT) >= KILL["at"]:
            await asyncio.sleep(3600)
        return Completion(text=json.dumps(TRUTH[request.context["key"]]))


def test_run_sigterm_exits_143_with_one_line_and_resumes(bench_ws):
    ws, project, items, _ = bench_ws
    keys = {r["id"]: r["key"] for r in ws.store.items(project.name)}
    TRUTH.clear()
    TRUTH.update({keys[i]: _answer(t) for i, t in items})
    SENT.clear()
    KILL["at"] = 4
    r = cli(ws, "benchmark", "run", "-m", "glue-sigterm:x", "--concurrency", "2", "--json")
    assert r.exit_code == 143, (r.exit_code, r.output, r.exception)
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit)
    assert "terminated" in r.stderr and "rerun the same command to resume" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    with ws.store.begin() as conn:
        n = conn.execute(select(func.count()).select_from(tables.run_results)).scalar_one()
    assert n == 3
    SENT.clear()
    KILL["at"] = 0  # no signal this time: the rerun answers the rest
    r = cli(ws, "benchmark", "run", "-m", "glue-sigterm:x", "--concurrency", "2", "--json")
    assert r.exit_code == 0, r.output
    assert len(SENT) == len(items) - 3, "a rerun never repeats a scored answer"


def test_run_max_failures_stops_a_refused_endpoint_with_exit_1(bench_ws):
    from truthline.benchmark import RunConfig
    from truthline.benchmark._cli import run_cmd
    from truthline.models._stub import StubServer

    ws, _project, _items, _ = bench_ws
    denied = StubServer(cases={"": ["404"]}).start()  # a wrong URL (a rejected key stops at once)
    try:
        spec = f"openai:m@{denied.url}"
        r = cli(ws, "benchmark", "run", "-m", spec, "--concurrency", "1", "--max-failures", "3")
    finally:
        denied.stop()
    assert r.exit_code == 1, (r.output, r.exception)
    msg = str(r.exception)
    assert "3 consecutive failures" in msg and "http_404" in msg and "\n" not in msg
    assert len(denied.log) == 3, "it stops sending"
    with ws.store.begin() as conn:
        assert conn.execute(select(tables.runs.c.status)).scalar_one() == "partial"
        n = conn.execute(select(func.count()).select_from(tables.run_results)).scalar_one()
    assert n == 3
    # 0 disables the stop; negative counts are refused by the option
    r = cli(ws, "benchmark", "run", "-m", spec, "--max-failures", "-1")
    assert r.exit_code == 2
    # the CLI's default is the runner's
    import inspect

    default = inspect.signature(run_cmd).parameters["max_failures"].default
    assert default == RunConfig.__dataclass_fields__["max_failures"].default


def test_run_max_failures_zero_never_stops(bench_ws):
    from truthline.models._stub import StubServer

    ws, _project, items, _ = bench_ws
    denied = StubServer(cases={"": ["404"]}).start()
    try:
        spec = f"openai:m@{denied.url}"
        r = cli(ws, "benchmark", "run", "-m", spec, "--concurrency", "1", "--max-failures", "0")
    finally:
        denied.stop()
    assert r.exit_code == 0, (r.output, r.exception)
    assert len(denied.log) == len(items), "every item was asked"


def test_run_id_with_a_path_is_refused_before_it_names_a_file(bench_ws):
    ws, project, _items, _ = bench_ws
    bad = "x/../../../escaped"
    r = cli(ws, "benchmark", "run", "-m", "rule:majority", "--run", bad)
    assert r.exit_code == 1 and "--run" in str(r.exception) and "'/'" in str(r.exception)
    with ws.store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(tables.runs)).scalar_one() == 0
    # a run stored under such an id (library call, older version) cannot name the report file
    from truthline.benchmark import RunConfig, run_benchmark

    run_benchmark(
        ws.store, project, RunConfig(models=["rule:majority"], run_id=bad), progress=False
    )
    before = {p for p in ws.root.parent.rglob("*")}
    r = cli(ws, "benchmark", "report", bad, "--resamples", "0")
    assert r.exit_code == 1 and "run id" in str(r.exception), (r.output, r.exception)
    assert {p for p in ws.root.parent.rglob("*")} == before, "nothing written"
    assert not (ws.reports_dir.parent.parent / "escaped.md").exists()


def test_report_and_export_outputs_into_missing_folders_or_one_clear_line(bench_ws, tmp_path):
    from truthline.errors import TruthlineError

    ws, _project, _items, _ = bench_ws
    r = cli(ws, "benchmark", "run", "-m", "rule:majority", "--json")
    rid = json.loads(r.stdout)["run_id"]
    out = tmp_path / "new" / "deeper" / "report.md"
    r = cli(ws, "benchmark", "report", rid, "--out", str(out), "--resamples", "0")
    assert r.exit_code == 0 and "Leaderboard" in out.read_text(), (r.output, r.exception)
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    r = cli(ws, "benchmark", "report", rid, "--out", str(blocker / "r.md"), "--resamples", "0")
    assert isinstance(r.exception, TruthlineError), r.exception
    assert str(r.exception).startswith(f"--out {blocker / 'r.md'}: cannot create the folder")
    r = cli(ws, "benchmark", "export", "--out", str(blocker / "rel"), "--format", "jsonl")
    assert isinstance(r.exception, TruthlineError), r.exception
    assert str(r.exception).startswith(f"--out {blocker / 'rel'}: cannot create the folder")
    assert blocker.read_text() == "not a folder"
    rel = tmp_path / "missing" / "parent" / "rel"
    r = cli(ws, "benchmark", "export", "--out", str(rel), "--format", "jsonl")
    assert r.exit_code == 0 and (rel / "SHA256SUMS").is_file(), (r.output, r.exception)


def test_item_key_with_dot_dot_never_writes_outside_the_release(bench_ws, tmp_path):
    """Keys come from users' CSVs (``audit import-table``): ``../../../escaped`` must be
    refused with a clear error or stay inside the release; export -> reload writes nothing
    anywhere else."""
    from truthline.benchmark import export_release, load_release
    from truthline.errors import TruthlineError
    from truthline.store import Store

    ws, project, items, _ = bench_ws
    bad = "../../../escaped"
    with ws.store.begin() as conn:
        conn.execute(tables.items.update().where(tables.items.c.id == items[0][0]).values(key=bad))
    rel, side = tmp_path / "a" / "b" / "rel", tmp_path / "side"
    side.mkdir()
    rel.parent.mkdir(parents=True)
    before = set(tmp_path.rglob("*"))

    def outside() -> list:
        new = set(tmp_path.rglob("*")) - before
        return sorted(str(p) for p in new if not ({rel, side} & {p, *p.parents}))

    try:
        export_release(ws.store, project, rel, fmt="jsonl")
    except TruthlineError as exc:
        assert bad in str(exc) and "\n" not in str(exc)
    assert outside() == [], "export wrote outside the release"
    if (rel / "release.json").exists():
        st = Store(f"sqlite:///{side / 'reload.db'}")
        try:
            load_release(rel, st, workspace_projects=side / "projects")
        except TruthlineError as exc:
            assert bad in str(exc) and "\n" not in str(exc)
        finally:
            st.close()
        assert outside() == [], "reload wrote outside the release"
