"""Review tasks name tier-1 annotators by pseudonym (issue 26): stable per project, new
annotators get the next free name, the mapping is kept in the store only."""

from __future__ import annotations

from pathlib import Path

from truthline.annotate._pseudonyms import pseudonym_name, pseudonyms, real_names
from truthline.workspace import Workspace


def test_pseudonym_names_run_like_spreadsheet_columns():
    names = [pseudonym_name(k) for k in (0, 1, 25, 26, 27, 51, 52, 701, 702)]
    assert names == [
        "annotator A",
        "annotator B",
        "annotator Z",
        "annotator AA",
        "annotator AB",
        "annotator AZ",
        "annotator BA",
        "annotator ZZ",
        "annotator AAA",
    ]


def test_pseudonyms_are_stable_and_kept_in_the_store(tmp_path: Path):
    store = Workspace.from_env(tmp_path / "ws").store
    first = pseudonyms(store, "p", ["zoe@x.org", "amy@x.org"])
    assert first == {"amy@x.org": "annotator A", "zoe@x.org": "annotator B"}
    # a later push with a new annotator keeps the names given and takes the next one
    again = pseudonyms(store, "p", ["bob@x.org", "zoe@x.org"])
    assert again == {"bob@x.org": "annotator C", "zoe@x.org": "annotator B"}
    # another project numbers its own annotators
    assert pseudonyms(store, "q", ["zoe@x.org"]) == {"zoe@x.org": "annotator A"}
    assert real_names(store, "p") == {
        "annotator A": "amy@x.org",
        "annotator B": "zoe@x.org",
        "annotator C": "bob@x.org",
    }
    # reopening the store (a new process) gives the same names
    reopened = Workspace.from_env(tmp_path / "ws").store
    assert pseudonyms(reopened, "p", ["amy@x.org"]) == {"amy@x.org": "annotator A"}
