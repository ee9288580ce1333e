"""The mannequin's poses on the host: heights, bone lengths, ground contact."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.scenes import _humanoid as hu


@pytest.mark.parametrize("pose", sorted(hu.POSES))
def test_every_pose_keeps_bone_lengths_and_stands_on_the_ground(pose):
    scale = 1.75 / hu.REST_HEIGHT_M
    joints = hu.posed_joints(pose, 1.75)
    for bone, (_parent, h, t) in hu.REST_BONES.items():
        rest_len = np.linalg.norm(np.subtract(t, h)) * scale
        head, tail = joints[bone]
        assert np.linalg.norm(tail - head) == pytest.approx(rest_len, rel=1e-9), bone
    v, faces, _ = hu.figure_mesh(pose)
    assert v[:, 2].min() == pytest.approx(0.0, abs=1e-12)
    assert max(max(f) for f in faces) == len(v) - 1


def test_heights_standing_and_crouching():
    standing = hu.figure_height("standing")
    assert standing == pytest.approx(1.75, abs=0.03)  # capsules are inset: no overshoot
    assert hu.figure_height("crouching") < 0.85 * standing
    for pose in hu.PAPER_ACTIONS:
        assert pose in hu.POSES and pose in hu.ACTION_WORDS


def test_standing_is_left_right_symmetric():
    v, _, _ = hu.figure_mesh("standing")
    mirrored = v * np.array([-1.0, 1.0, 1.0])
    # every mirrored vertex has a twin in the mesh
    d = np.min(np.linalg.norm(v[None, :, :] - mirrored[::7, None, :], axis=2), axis=1)
    assert d.max() < 1e-9


def test_walking_moves_a_leg_forward_and_unknown_pose_is_named():
    j = hu.posed_joints("walking")
    assert j["shin.L"][1][1] < j["shin.R"][1][1] - 0.2  # left foot ahead (-Y is forward)
    with pytest.raises(KeyError, match="unknown pose 'flying'"):
        hu.pose_table("flying")
