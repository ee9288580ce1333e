"""The acceptability-rating project through a real Label Studio: the generated project is
pushed blind (no model output), SIMULATED raters rate through the API as their own
login-capable users (one skips a frame), pull brings the ratings back, and the scorer is
validated against them."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.annotate.conftest import start_copy
from truthline.systems.realitybench import _pow as P

pytestmark = pytest.mark.labelstudio


@pytest.fixture(scope="module")
def ls(tmp_path_factory):
    inst = start_copy(tmp_path_factory.mktemp("ls") / "data")
    try:
        yield inst
    finally:
        inst.server.stop()


def test_ratings_in_label_studio_come_back_and_validate_the_scorer(ls, tmp_path):
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

    frames = P.proxy_frames(4, envs=("tape_gap", "plate"), seed=1)
    paths = []
    for i in range(len(frames)):
        p = tmp_path / f"{i}.png"
        Image.fromarray(np.full((24, 32, 3), 25 * i, np.uint8)).save(p)
        paths.append(str(p))
    frames["image"] = paths
    ws = Workspace.from_env(tmp_path / "ws")
    proj = P.write_rating_project(ws, frames)
    verdicts = P.simulated_verdicts(frames, seed=2)
    srv = MediaHTTPServer.for_workspace(ws, ws.media_dir, origins=[ls.url]).start_thread()
    try:
        with ls.admin() as admin:
            rep = push(
                ws.store, proj, admin, "blind", media_base=srv.url, media_root=ws.media_dir,
                split=0.0, progress=False,
            )  # fmt: skip
            assert rep.created == len(frames) and rep.predictions == 0
            raters = list(verdicts.columns[:3])
            secrets = ws.secrets_dir / USERS_FILE
            add_users(admin, raters, secrets)
            with ws.store.begin() as conn:
                tasks = {r.item_id: r.ls_task_id for r in conn.execute(tables.ls_tasks.select())}
            keys = {r["id"]: r["key"] for r in ws.store.items(proj.name)}
            skipped = (raters[0], sorted(keys.values())[0])
            for who in raters:
                with user_client(ls.url, who, secrets) as c:
                    for item, task in sorted(tasks.items()):
                        key = keys[item]
                        v = verdicts.loc[key, who]
                        if (who, key) == skipped or v is None:
                            continue  # a rater who skips a frame leaves no rating
                        submit_annotation(c, proj, task, {"acceptable": bool(v)}, 3.0)
            pull(ws.store, proj, admin, progress=False)
    finally:
        srv.shutdown()
        srv.server_close()

    got = P.ratings_table(ws.store, proj)
    assert sorted(got.columns) == sorted(raters) and len(got) == len(frames)
    for key in got.index:
        for who in raters:
            want = verdicts.loc[key, who]
            want = None if (who, key) == skipped or want is None else bool(want)
            have = got.loc[key, who]
            assert (None if have is None or have != have else bool(have)) == want, (key, who)
    v = P.validate_scorer(frames, got, resamples=50)
    assert v.counts["frames"] == len(frames) and len(v.loo) == 3
