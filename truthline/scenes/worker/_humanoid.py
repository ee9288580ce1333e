"""The mannequin in Blender: the Rigify metarig supplies the skeleton, ``_humanoid`` poses
it and makes the capsule mesh (one object, so the mask and bbox are one object's)."""

from __future__ import annotations

from typing import Any

import addon_utils  # type: ignore[import-not-found]
import bpy  # type: ignore[import-not-found]

from truthline.scenes import _humanoid

_BODY = tuple(_humanoid.REST_BONES)


def metarig_rest() -> dict[str, tuple[str, tuple[float, ...], tuple[float, ...]]]:
    """Add Rigify's human metarig, read its body bones (parent, head, tail), remove it."""
    # default_set=True registers the add-on in the preferences; without it Rigify's
    # register() fails looking up its own preferences (the metarig operator still works).
    addon_utils.enable("rigify", default_set=True)
    if bpy.context.view_layer.objects.active is not None:
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.armature_human_metarig_add()
    arm = bpy.context.active_object
    try:
        out = {}
        for name in _BODY:
            b = arm.data.bones[name]
            out[name] = (
                b.parent.name if b.parent else "",
                tuple(round(float(x), 4) for x in b.head_local),
                tuple(round(float(x), 4) for x in b.tail_local),
            )
        return out
    finally:
        data = arm.data
        bpy.data.objects.remove(arm, do_unlink=True)
        bpy.data.armatures.remove(data)


def add_figure(
    ctx: Any,
    pose: str,
    height_m: float,
    material: Any,
    location: tuple[float, float, float] = (0.0, 0.0, 0.0),
    yaw_deg: float = 0.0,
    name: str = "Person",
) -> tuple[Any, dict[str, Any]]:
    """The posed mannequin as one mesh object; returns ``(object, joints)``."""
    import math

    import numpy as np

    rest = metarig_rest()
    verts, faces, joints = _humanoid.figure_mesh(pose, height_m, rest=rest)  # type: ignore[arg-type]
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    loc = np.asarray(location, float)
    verts = verts @ rot.T + loc
    joints = {k: (rot @ h + loc, rot @ t + loc) for k, (h, t) in joints.items()}
    obj = ctx.mesh(name, verts, faces, material, smooth=True)
    return obj, joints
