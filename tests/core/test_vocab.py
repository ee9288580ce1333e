"""One definition each: the vocabulary (arms, gold slices, provenances, directions, answer
outcomes) lives in ``truthline.vocab`` as ``StrEnum``s that *are* their strings, every old
name is that definition, and gold is written by one function."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from truthline.vocab import PUSH_ARMS, REVIEW_ARMS, Arm, Direction, Outcome, Provenance, Slice

PKG = Path(__file__).resolve().parents[2] / "truthline"
VOCABS = {
    "Arm": {str(x) for x in Arm},
    "Slice": {str(x) for x in Slice},
    "Provenance": {str(x) for x in Provenance},
    "Direction": {str(x) for x in Direction},
    "Outcome": {str(x) for x in Outcome},
    "PUSH_ARMS": {str(x) for x in PUSH_ARMS},
    "REVIEW_ARMS": {str(x) for x in REVIEW_ARMS},
}
KNOWN: dict[str, str] = {
    # owned by other hands this round: the line to write is in the issue-21 note; drop each
    # entry when it is replaced by the vocabulary
    "benchmark/_samples.py": "Outcome",
}


def test_members_are_their_strings_in_comparisons_and_json():
    assert Arm.BLIND == "blind" and "anchored" in PUSH_ARMS and "review" in REVIEW_ARMS
    assert Slice.VLM_SOURCED == "vlm-sourced" and f"{Slice.VLM_SOURCED}" == "vlm-sourced"
    assert {"blind": 1}[Arm.BLIND] == 1 and {Arm.BLIND: 1}["blind"] == 1
    data = {Arm.ANCHORED: [Provenance.ANCHORED_KEPT, Outcome.PARSE_ERROR]}
    plain = {"anchored": ["anchored_kept", "parse_error"]}
    assert json.dumps(data) == json.dumps(plain)
    assert json.dumps(data, indent=2, sort_keys=True) == json.dumps(plain, indent=2, sort_keys=True)
    assert Direction.HARMFUL_ANCHORING.label == "harmful anchoring"


def test_the_old_names_are_the_vocabulary():
    from truthline.annotate import _push
    from truthline.audit import PROVENANCES, SLICES, _data, _import, _metrics
    from truthline.benchmark import SLICES as BENCH_SLICES
    from truthline.benchmark import _samples

    assert tuple(Arm) == _import.ARMS
    assert _data.REVIEW_ARMS == REVIEW_ARMS == ("review", "adjudication")
    assert SLICES == BENCH_SLICES == tuple(Slice) == ("all", "blind", "anchored", "vlm-sourced")
    assert tuple(Provenance) == PROVENANCES
    assert tuple(Direction) == _metrics.DIRECTIONS
    assert tuple(map(str, getattr(_push, "ARMS", PUSH_ARMS))) == tuple(map(str, PUSH_ARMS))
    assert tuple(map(str, _samples.OUTCOMES)) == tuple(map(str, Outcome))


def _string_sets(path: Path) -> list[tuple[int, set[str]]]:
    """``(line, values)`` of every tuple/list/set literal of 2+ string constants."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Tuple | ast.List | ast.Set) or len(node.elts) < 2:
            continue
        consts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(consts) == len(node.elts) and all(isinstance(v, str) for v in consts):
            out.append((node.lineno, set(consts)))
    return out


def test_no_second_copy_of_a_vocabulary():
    """A literal listing exactly the members of a vocabulary is a second definition of it."""
    copies = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        if rel == "vocab.py":
            continue
        for line, values in _string_sets(path):
            for name, members in VOCABS.items():
                if values == members and KNOWN.get(rel) != name:
                    copies.append(f"{rel}:{line} repeats {name}")
    assert not copies, copies


def test_vocab_imports_only_the_standard_library():
    code = (
        "import sys, truthline.vocab\n"
        "print(sorted(m for m in sys.modules if m.startswith('truthline')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['truthline', 'truthline.errors', 'truthline.vocab']"


def test_gold_is_inserted_in_one_place():
    """Finalize, gold known by construction and a reloaded release all write through
    ``audit._gold.insert_snapshot``; nothing else inserts into the gold tables."""
    writers = []
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text()
        for table in ("gold_snapshots", "gold"):
            for pattern in (f"{table}.insert(", f"tables.{table}.insert("):
                if pattern in text:
                    writers.append(str(path.relative_to(PKG)))
    assert set(writers) == {"audit/_gold.py"}, writers
