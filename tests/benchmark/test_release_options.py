"""Release options: the licence declared in the project definition fills the dataset card
(a LICENSE file still wins, and the card says which), and ``--hide-test-answers``
publishes the test split without its answers (they go to private/ only)."""

from __future__ import annotations

import json

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from truthline.benchmark._export import export_release, load_release
from truthline.errors import ProjectError
from truthline.project import load_project
from truthline.store import Store, tables


def _with_licence(project, line: str | None):
    """The project reloaded with ``line`` added to its project.toml."""
    toml = project.source
    text = toml.read_text(encoding="utf-8")
    if line:
        text = text.replace('media = "frames"', f'{line}\nmedia = "frames"', 1)
    toml.write_text(text, encoding="utf-8")
    return load_project(project.root)


def _card(out):
    card = (out / "public" / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(card.split("---\n")[1]), card.split("## Licence", 1)[1]


def test_declared_licence_fills_the_card(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    project = _with_licence(project, 'license = "CC-BY-4.0"')
    assert project.license == "CC-BY-4.0"
    rel = export_release(ws.store, project, tmp_path / "rel")
    header, section = _card(tmp_path / "rel")
    assert header["license"] == "cc-by-4.0"  # the hub's form of the SPDX id
    assert "CC-BY-4.0" in section and "project definition" in section
    assert "TO FILL" not in section
    assert rel["licence"] == {"id": "cc-by-4.0", "source": "project definition"}
    datasets.load_dataset(str(tmp_path / "rel" / "public"))  # the card still loads


def test_licence_file_wins_and_the_card_says_so(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    project = _with_licence(project, 'licence = "MIT"')  # the British spelling works too
    assert project.license == "MIT"
    (project.root / "LICENSE").write_text("Acme Data Licence 1.0\n\nTerms...\n")
    rel = export_release(ws.store, project, tmp_path / "rel")
    header, section = _card(tmp_path / "rel")
    assert header["license"] == "other"
    assert "LICENSE file" in section and "Acme Data Licence 1.0" in section
    assert 'wins over `license = "MIT"`' in section
    assert rel["licence"]["source"] == "project/LICENSE"
    assert (tmp_path / "rel" / "public" / "project" / "LICENSE").is_file()


def test_no_licence_is_a_marked_gap(bench_ws, tmp_path):
    from truthline.cli import app

    ws, _project, _items, _snap = bench_ws
    r = CliRunner().invoke(
        app, ["--workspace", str(ws.root), "benchmark", "export", "--out", str(tmp_path / "r")]
    )
    assert r.exit_code == 0, r.output
    _header, section = _card(tmp_path / "r")
    assert "TO FILL" in section and "no licence" in r.output


@pytest.mark.parametrize("bad", ["CC BY 4.0", "-MIT", "cc/by"])
def test_a_licence_that_is_no_spdx_id_is_refused(bench_ws, bad):
    _ws, project, _items, _snap = bench_ws
    with pytest.raises(ProjectError) as exc:
        _with_licence(project, f'license = "{bad}"')
    msg = str(exc.value)
    assert "project.toml" in msg and "license" in msg and "SPDX" in msg and "other" in msg


def test_licence_other_without_a_file_says_to_add_one(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    project = _with_licence(project, 'license = "other"')
    export_release(ws.store, project, tmp_path / "rel")
    header, section = _card(tmp_path / "rel")
    assert header["license"] == "other" and "add a LICENSE file" in section


def _gold_column(path):
    return pq.read_table(path).column("gold").to_pylist()


def test_hidden_test_answers(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    open_rel = export_release(ws.store, project, tmp_path / "open", fmt="jsonl")
    rel = export_release(ws.store, project, tmp_path / "hid", fmt="jsonl", hide_test_answers=True)
    assert rel["splits"]["items"] == open_rel["splits"]["items"]  # same seeded split
    assert rel["splits"]["test_answers"] == "withheld"
    assert open_rel["splits"]["test_answers"] == "public"  # the default stays as it was
    hid, opn = tmp_path / "hid" / "public" / "data", tmp_path / "open" / "public" / "data"
    test = "test-00000-of-00001.parquet"
    assert set(_gold_column(hid / test)) == {None}
    assert None not in _gold_column(opn / test)
    assert pq.read_table(hid / test).column("provenance").to_pylist() == [None] * len(
        _gold_column(hid / test)
    )
    train = "train-00000-of-00001.parquet"
    assert _gold_column(hid / train) == _gold_column(opn / train)
    # inputs stay public: the same prompts and images
    for col in ("item", "prompt", "image"):
        assert (
            pq.read_table(hid / test).column(col).to_pylist()
            == pq.read_table(opn / test).column(col).to_pylist()
        )
    # the answers are in private/, exactly as the open release publishes them
    private = [
        json.loads(line)
        for line in (tmp_path / "hid" / "private" / "test_answers.jsonl").read_text().splitlines()
    ]
    opened = pq.read_table(opn / test).to_pylist()
    got = {r["item"]: r["gold"] for r in private}
    assert got == {r["item"]: r["gold"] for r in opened}
    # datasets loads both splits; the card says the answers are withheld
    ds = datasets.load_dataset(str(tmp_path / "hid" / "public"))
    assert all(ex["gold"] is None for ex in ds["test"])
    assert all(ex["gold"] is not None for ex in ds["train"])
    card = (tmp_path / "hid" / "public" / "README.md").read_text()
    assert "Test answers are withheld" in card and 'ds["train"][0]' in card
    assert "Test answers are withheld" not in (tmp_path / "open/public/README.md").read_text()
    # the whole release reloads with every gold decision
    st = Store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        back = load_release(tmp_path / "hid", st, workspace_projects=tmp_path / "projects")
        with st.begin() as conn:
            n = conn.execute(tables.gold.select()).all()
        n_targets = len((tmp_path / "open/private/targets.jsonl").read_text().splitlines())
        assert len(n) == n_targets and back["items"] == 16
    finally:
        st.close()


def test_cli_hide_test_answers(bench_ws, tmp_path):
    from truthline.cli import app

    ws, _project, _items, _snap = bench_ws
    out = tmp_path / "r"
    r = CliRunner().invoke(
        app,
        ["--workspace", str(ws.root), "benchmark", "export", "--out", str(out),
         "--hide-test-answers", "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["splits"]["test_answers"] == "withheld"
    assert set(_gold_column(out / "public/data/test-00000-of-00001.parquet")) == {None}
