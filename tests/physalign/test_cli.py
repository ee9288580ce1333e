"""`truthline physalign`: --help everywhere, --json that parses, exit codes 0 / 1 / 2 and
one-line errors naming the file, item and field; the README's demo sequence end to end
against a real Label Studio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    ["physalign"],
    ["physalign", "generate"],
    ["physalign", "compile"],
    ["physalign", "leak-check"],
    ["physalign", "export"],
    ["physalign", "status"],
    ["physalign", "passes"],
    ["physalign", "passes", "push"],
    ["physalign", "passes", "pull"],
    ["physalign", "passes", "simulate"],
    ["physalign", "verify"],
    ["physalign", "verify", "push"],
    ["physalign", "verify", "pull"],
    ["physalign", "verify", "simulate"],
    ["physalign", "adjudicate"],
    ["physalign", "adjudicate", "push"],
    ["physalign", "adjudicate", "pull"],
    ["physalign", "adjudicate", "simulate"],
    ["physalign", "adjudicate", "load"],
    ["physalign", "import-problems"],
    ["physalign", "screening"],
    ["physalign", "passes", "load"],
    ["physalign", "verify", "load"],
    ["physalign", "verify", "reverify-push"],
    ["physalign", "verify", "reverify-pull"],
    ["physalign", "post-audit"],
    ["physalign", "post-audit", "plan"],
    ["physalign", "post-audit", "report"],
    ["physalign", "solve"],
]


def tl(*args: str, ws: Path | None = None, env: dict | None = None, check: int | None = 0):
    e = dict(os.environ) | (env or {})
    if ws is not None:
        e["TRUTHLINE_WORKSPACE"] = str(ws)
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=600,
    )
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_help_everywhere(cmd: list[str]):
    assert "Usage:" in tl(*cmd, "--help").stdout


def test_generate_json_and_errors(tmp_path: Path):
    out = json.loads(
        tl(
            "physalign",
            "generate",
            "--n",
            "4",
            "--seed",
            "3",
            "--out",
            str(tmp_path / "g"),
            "--json",
        ).stdout
    )
    assert (
        out["n"] == 4
        and out["release"]["probes"] > 0
        and out["import"]["items"] == out["release"]["probes"]
    )
    st = json.loads(
        tl("physalign", "status", "--release", str(tmp_path / "g" / "release"), "--json").stdout
    )
    assert st["probes"] == out["release"]["probes"] and st["verification"] == "not pulled"
    assert (
        json.loads(
            tl(
                "physalign", "leak-check", "--release", str(tmp_path / "g" / "release"), "--json"
            ).stdout
        )["probes"]
        == st["probes"]
    )
    # a usage error is exit 2; a bad input is one line and exit 1
    assert (
        tl("physalign", "generate", "--n", "0", "--out", str(tmp_path / "x"), check=2).returncode
        == 2
    )
    bad = tl(
        "physalign", "generate", "--n", "5", "--seed", "3", "--out", str(tmp_path / "g"), check=1
    )
    assert "another generation" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    miss = tl(
        "physalign", "compile", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "r"), check=1
    )
    assert "nope.jsonl: no such file" in miss.stderr
    # a record with pass 5: file, line, parent and field named
    recs = (tmp_path / "g" / "annotations.jsonl").read_text().splitlines()
    r = json.loads(recs[1])
    r["pass5"] = {"analysis_only": True}
    recs[1] = json.dumps(r)
    (tmp_path / "bad.jsonl").write_text("\n".join(recs) + "\n")
    err = tl(
        "physalign",
        "compile",
        str(tmp_path / "bad.jsonl"),
        "--out",
        str(tmp_path / "r2"),
        "--image-root",
        str(tmp_path / "g"),
        check=1,
    ).stderr
    assert "bad.jsonl:2 (parent par002): field pass5" in err
    assert not (tmp_path / "r2" / "public").exists()
    # export before verification needs --unverified
    err = tl("physalign", "export", "--release", str(tmp_path / "g" / "release"), check=1).stderr
    assert "no verification decisions yet" in err
    # Label Studio commands without a server: one line, exit 1
    err = tl(
        "physalign",
        "verify",
        "pull",
        "--release",
        str(tmp_path / "g" / "release"),
        ws=tmp_path / "ws",
        check=1,
    ).stderr
    assert "Label Studio is not running" in err


@pytest.mark.labelstudio
def test_readme_demo_sequence(ls, tmp_path: Path):
    """generate -> passes (SIMULATED) -> compile -> blind verify (SIMULATED) -> adjudicate
    (SIMULATED) -> export -> items import + audit import-table + finalize, all by the CLI."""
    ws, work = tmp_path / "ws", tmp_path / "pa"
    env = {"LABEL_STUDIO_API_KEY": ls.creds.token}
    url = ["--url", ls.url]

    def run(*a: str) -> dict:
        return json.loads(tl(*a, "--json", ws=ws, env=env).stdout)

    run("init", "physics-diagrams")
    run("physalign", "generate", "--n", "4", "--seed", "5", "--out", str(work), "--no-compile")
    run("physalign", "passes", "push", "--work", str(work), *url)
    run(
        "physalign",
        "passes",
        "simulate",
        "--work",
        str(work),
        "--annotator",
        "demo-ann@physalign.local",
        *url,
    )
    run("physalign", "passes", "pull", "--work", str(work), *url)
    run("physalign", "passes", "push", "--work", str(work), "--stage", "review", *url)
    run(
        "physalign",
        "passes",
        "simulate",
        "--work",
        str(work),
        "--stage",
        "review",
        "--annotator",
        "demo-rev@physalign.local",
        *url,
    )
    pulled = run("physalign", "passes", "pull", "--work", str(work), *url)
    assert pulled["review"]["reviewed"] == 4 and pulled["review"]["disputed"] == 0
    rel = str(work / "release")
    comp = run(
        "physalign",
        "compile",
        str(work / "passes" / "annotations.jsonl"),
        "--out",
        rel,
        "--seed",
        "5",
    )
    revs = ["--reviewer", "demo-a@physalign.local", "--reviewer", "demo-b@physalign.local"]
    run("physalign", "verify", "push", "--release", rel, *revs, *url)
    run("physalign", "verify", "simulate", "--release", rel, *revs, "--wrong-every", "6", *url)
    v = run("physalign", "verify", "pull", "--release", rel, *url)
    n_adj = v["by_status"]["needs_adjudication"]
    assert n_adj == comp["probes"] // 6
    run("physalign", "adjudicate", "push", "--release", rel, *url)
    adj = ["--adjudicator", "demo-adjudicator@physalign.local"]
    run(
        "physalign", "adjudicate", "simulate", "--release", rel, *adj, "--withhold-every", "2", *url
    )
    final = run("physalign", "adjudicate", "pull", "--release", rel, *url)
    withheld = final["by_status"].get("withheld", 0)
    assert withheld == n_adj // 2
    exp = run("physalign", "export", "--release", rel, "--project", "physics-diagrams")
    assert exp["items"] == comp["probes"] - withheld and exp["withheld"] == withheld
    imp = run(
        "items",
        "import",
        exp["media"],
        "--media-root",
        exp["media_root"],
        "--metadata",
        exp["metadata"],
    )
    assert imp["added"] == exp["items"]
    labels = run("audit", "import-table", exp["labels"])
    assert labels["expert_reviews"] == exp["items"]
    gold = run("audit", "finalize")
    assert gold["counts"]["items"] == exp["items"]
    st = run("physalign", "status", "--release", rel)
    assert st["decided_by"]["demo-adjudicator@physalign.local"] == n_adj
