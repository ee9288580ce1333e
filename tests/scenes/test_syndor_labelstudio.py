"""The discernibility labelling project through a real Label Studio: the generated project is
pushed (blind, no model output), SIMULATED annotators label through the API as their own
login-capable users, pull brings the labels back and the majority becomes the human label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.annotate.conftest import start_copy
from truthline.systems.syndorbench import _discern as dis
from truthline.systems.syndorbench import _syndor as sd

from .test_syndor import DISTANCES, _render

pytestmark = pytest.mark.labelstudio


@pytest.fixture(scope="module")
def ls(tmp_path_factory):
    inst = start_copy(tmp_path_factory.mktemp("ls") / "data")
    try:
        yield inst
    finally:
        inst.server.stop()


def test_sample_labelled_in_label_studio_comes_back_as_human_labels(ls, tmp_path):
    from truthline.annotate import (
        MediaHTTPServer,
        add_users,
        pull,
        push,
        submit_annotation,
        user_client,
    )
    from truthline.annotate._users import USERS_FILE
    from truthline.store import tables
    from truthline.workspace import Workspace

    rng = np.random.default_rng(0)
    src = tmp_path / "renders"
    src.mkdir()
    renders = pd.DataFrame(
        [_render(src, f"r{i}", d, "midnight", rng, i) for i, d in enumerate(DISTANCES)]
    )
    items = sd.make_items(renders, tmp_path / "out", seed=0, nv={"denoise_strength": 3.0})
    sample = sd.label_sample(items, seed=0)
    assert len(sample) == dis.cochran_n(6) == 6

    ws = Workspace.from_env(tmp_path / "ws")
    proj = dis.write_label_project(ws, "dori-labels", sample, strata=["dori", "lighting"])
    srv = MediaHTTPServer.for_workspace(ws, ws.media_dir, origins=[ls.url]).start_thread()
    try:
        with ls.admin() as admin:
            rep = push(
                ws.store, proj, admin, "blind", media_base=srv.url, media_root=ws.media_dir,
                split=0.0, progress=False,
            )  # fmt: skip
            assert rep.created == 6 and rep.predictions == 0  # blind: no model output shown
            people = ["sim-a@simulated.invalid", "sim-b@simulated.invalid"]
            secrets = ws.secrets_dir / USERS_FILE
            add_users(admin, people, secrets)
            with ws.store.begin() as conn:
                tasks = {r.item_id: r.ls_task_id for r in conn.execute(tables.ls_tasks.select())}
            keys = {r["id"]: r["key"] for r in ws.store.items("dori-labels")}
            # SIMULATED annotators: both say "yes" on night-vision items, "no" on night ones,
            # except b, who calls the first night item "partial"
            first_night = sorted(k for k in keys.values() if k.endswith("-night"))[0]
            for who in people:
                with user_client(ls.url, who, secrets) as c:
                    for item, task in sorted(tasks.items()):
                        key = keys[item]
                        level = "yes" if key.endswith("night-vision") else "no"
                        if who == people[1] and key == first_night:
                            level = "partial"
                        submit_annotation(
                            c, proj, task, {"present": level != "no", "discernible": level}, 4.0
                        )
            pulled = pull(ws.store, proj, admin, progress=False)
            assert pulled.as_dict()
    finally:
        srv.shutdown()
        srv.server_close()

    human = dis.human_labels(ws.store, "dori-labels").set_index("key")
    assert len(human) == 6 and set(human["source"]) == {"label_studio"}
    assert (human["n_annotators"] == 2).all()
    nv = [k for k in human.index if k.endswith("night-vision")]
    assert (
        human.loc[nv, "discernible"].all() and (human.loc[nv, "discernible_level"] == "yes").all()
    )
    assert human.loc[first_night, "discernible"] is None  # no vs partial: a tie, no label
    rest = [k for k in human.index if k.endswith("-night") and k != first_night]
    assert not human.loc[rest, "discernible"].any()
