"""A posable mannequin: the Rigify human metarig's skeleton, posed by a table of bone
directions and skinned with tapered capsules — pure numpy, so poses and heights are tested
on the host and the worker only turns the arrays into one Blender mesh.

The rest skeleton below is the one ``bpy.ops.object.armature_human_metarig_add()`` builds in
bpy 5.0.1 (159 bones; we use the 23 of the body; a worker test checks these numbers against
the live metarig). It is 1.98 m tall, faces −Y, its left side (``.L``) is +X. A pose gives,
for some bones, the world direction the bone points in; every other bone keeps its rest
direction turned by its parent's rotation (hands follow forearms). Bones are applied parent →
child (the table's order), bone lengths are kept, capsule ends are inset by their radius so
nothing overshoots the joints, and the figure is scaled to ``height_m`` (bone lengths) and
stood on z = 0. What a rater needs to judge an action at Recognition distance: a short-sleeved
shirt over trousers of another colour (:data:`PARTS`), so forearms and hands (skin) stand out
against the torso and legs against it; shoes; and a hair cap over the back and top of the head
(:func:`hair_cap`) so the head, and which way it faces, reads apart from the hands. No face.

Poses: SynDORBench's action set (walking, kicking, sneaking, choking, dodging, covering face
with hands, stepping over something, guard up) plus standing and crouching.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# name: (parent, rest head, rest tail), metres, parents first.
REST_BONES: dict[str, tuple[str, tuple[float, float, float], tuple[float, float, float]]] = {
    "spine": ("", (0.0, 0.0552, 1.0099), (0.0, 0.0172, 1.1573)),
    "spine.001": ("spine", (0.0, 0.0172, 1.1573), (0.0, 0.0004, 1.2929)),
    "spine.002": ("spine.001", (0.0, 0.0004, 1.2929), (0.0, 0.0059, 1.4657)),
    "spine.003": ("spine.002", (0.0, 0.0059, 1.4657), (0.0, 0.0114, 1.6582)),
    "spine.004": ("spine.003", (0.0, 0.0114, 1.6582), (0.0, -0.013, 1.7197)),
    "spine.005": ("spine.004", (0.0, -0.013, 1.7197), (0.0, -0.0247, 1.7813)),
    "spine.006": ("spine.005", (0.0, -0.0247, 1.7813), (0.0, -0.0247, 1.9796)),
    "shoulder.L": ("spine.003", (0.0183, -0.0684, 1.6051), (0.1694, 0.0205, 1.605)),
    "upper_arm.L": ("shoulder.L", (0.1953, 0.0267, 1.5846), (0.4424, 0.0885, 1.4491)),
    "forearm.L": ("upper_arm.L", (0.4424, 0.0885, 1.4491), (0.6594, 0.0492, 1.3061)),
    "hand.L": ("forearm.L", (0.6594, 0.0492, 1.3061), (0.7234, 0.0412, 1.2585)),
    "thigh.L": ("spine", (0.098, 0.0124, 1.072), (0.098, -0.0286, 0.5372)),
    "shin.L": ("thigh.L", (0.098, -0.0286, 0.5372), (0.098, 0.0162, 0.0852)),
    "foot.L": ("shin.L", (0.098, 0.0162, 0.0852), (0.098, -0.0934, 0.0167)),
    "toe.L": ("foot.L", (0.098, -0.0934, 0.0167), (0.098, -0.1606, 0.0167)),
    "shoulder.R": ("spine.003", (-0.0183, -0.0684, 1.6051), (-0.1694, 0.0205, 1.605)),
    "upper_arm.R": ("shoulder.R", (-0.1953, 0.0267, 1.5846), (-0.4424, 0.0885, 1.4491)),
    "forearm.R": ("upper_arm.R", (-0.4424, 0.0885, 1.4491), (-0.6594, 0.0492, 1.3061)),
    "hand.R": ("forearm.R", (-0.6594, 0.0492, 1.3061), (-0.7234, 0.0412, 1.2585)),
    "thigh.R": ("spine", (-0.098, 0.0124, 1.072), (-0.098, -0.0286, 0.5372)),
    "shin.R": ("thigh.R", (-0.098, -0.0286, 0.5372), (-0.098, 0.0162, 0.0852)),
    "foot.R": ("shin.R", (-0.098, 0.0162, 0.0852), (-0.098, -0.0934, 0.0167)),
    "toe.R": ("foot.R", (-0.098, -0.0934, 0.0167), (-0.098, -0.1606, 0.0167)),
}
REST_HEIGHT_M = 1.9796

# Capsule radius per bone at rest scale (m).
RADII: dict[str, float] = {
    "spine": 0.15, "spine.001": 0.14, "spine.002": 0.15, "spine.003": 0.155,
    "spine.004": 0.06, "spine.005": 0.06, "spine.006": 0.1,
    "shoulder": 0.06, "upper_arm": 0.055, "forearm": 0.046, "hand": 0.042,
    "thigh": 0.085, "shin": 0.062, "foot": 0.048, "toe": 0.04,
}  # fmt: skip

Vec = tuple[float, float, float]

# Directions in the figure's frame: +X its left, −Y its front, +Z up. ".L" entries are
# mirrored to ".R" unless the pose gives the ".R" bone itself.
POSES: dict[str, dict[str, Vec]] = {
    "standing": {
        "upper_arm.L": (0.15, 0.02, -1), "forearm.L": (0.08, -0.08, -1),
        "thigh.L": (0.03, 0, -1), "shin.L": (0, 0.02, -1),
    },
    "walking": {
        "upper_arm.L": (0.12, 0.35, -1), "forearm.L": (0.05, 0.05, -1),
        "upper_arm.R": (-0.12, -0.35, -1), "forearm.R": (-0.05, -0.8, -1),
        "thigh.L": (0.02, -0.45, -1), "shin.L": (0, -0.12, -1),
        "thigh.R": (-0.02, 0.3, -1), "shin.R": (0, 0.55, -1),
    },
    "crouching": {
        "spine": (0, -0.6, 1), "spine.001": (0, -0.7, 1), "spine.002": (0, -0.5, 1),
        "spine.003": (0, -0.3, 1),
        "upper_arm.L": (0.15, -0.6, -1), "forearm.L": (0.02, -1, -0.2),
        "thigh.L": (0.25, -1, -0.1), "shin.L": (0.02, 0.8, -1), "foot.L": (0, -1, -0.2),
    },
    "guard_up": {
        "upper_arm.L": (0.12, -0.92, -0.36), "forearm.L": (-0.34, -0.43, 0.84),
        "upper_arm.R": (-0.22, -0.79, -0.57), "forearm.R": (0.36, -0.31, 0.88),
        "thigh.L": (0.15, -0.35, -1), "shin.L": (0, 0.1, -1),
        "thigh.R": (-0.15, 0.3, -1), "shin.R": (0, 0.4, -1),
    },
    "kicking": {
        "spine.002": (0, 0.12, 1), "spine.003": (0, 0.15, 1),
        "upper_arm.L": (0.8, 0.15, -0.5), "forearm.L": (0.6, -0.2, -0.3),
        "upper_arm.R": (-0.8, 0.2, -0.4), "forearm.R": (-0.6, -0.3, -0.2),
        "thigh.L": (0.04, 0.05, -1), "shin.L": (0, 0.05, -1),
        "thigh.R": (-0.03, -1, -0.3), "shin.R": (0, -1, -0.05),
    },
    "sneaking": {
        "spine": (0, -0.5, 1), "spine.001": (0, -0.6, 1), "spine.002": (0, -0.5, 1),
        "spine.003": (0, -0.3, 1),
        "upper_arm.L": (0.25, -0.45, -1), "forearm.L": (0.02, -1, 0.1),
        "thigh.L": (0.12, -0.9, -1), "shin.L": (0, 0.45, -1),
        "thigh.R": (-0.12, 0.0, -1), "shin.R": (0, 0.85, -1),
    },
    "choking": {
        "spine.004": (0, 0.1, 1), "spine.005": (0, 0.15, 1),
        "upper_arm.L": (0.55, -0.83, 0.09), "forearm.L": (-0.87, 0.38, 0.33),
        "thigh.L": (0.1, -0.1, -1), "shin.L": (0, 0.05, -1),
        "thigh.R": (-0.1, 0.1, -1), "shin.R": (0, 0.1, -1),
    },
    "dodging": {
        "spine": (-0.35, 0.1, 1), "spine.001": (-0.5, 0.1, 1), "spine.002": (-0.45, 0.05, 1),
        "spine.003": (-0.3, 0, 1),
        "upper_arm.L": (-0.03, -0.84, 0.54), "forearm.L": (-0.7, -0.4, 0.6),
        "upper_arm.R": (-0.6, -0.13, -0.79), "forearm.R": (-0.98, -0.22, 0.0),
        "thigh.L": (0.4, -0.1, -1), "shin.L": (0.1, 0.25, -1),
        "thigh.R": (-0.12, 0.1, -1), "shin.R": (0.05, 0.4, -1),
    },
    "covering_face": {
        "spine.004": (0, -0.3, 1), "spine.005": (0, -0.35, 1), "spine.006": (0, -0.3, 1),
        "upper_arm.L": (-0.16, -0.98, -0.11), "forearm.L": (-0.31, 0.15, 0.94),
        "thigh.L": (0.06, 0, -1), "shin.L": (0, 0.03, -1),
    },
    "stepping_over": {
        "upper_arm.L": (0.45, -0.1, -1), "forearm.L": (0.3, -0.25, -1),
        "upper_arm.R": (-0.45, 0.15, -1), "forearm.R": (-0.3, -0.1, -1),
        "thigh.L": (0.06, -0.9, -0.45), "shin.L": (0, -0.25, -1),
        "thigh.R": (-0.04, 0.12, -1), "shin.R": (0, 0.05, -1),
    },
}  # fmt: skip

PAPER_ACTIONS = (
    "walking",
    "kicking",
    "sneaking",
    "choking",
    "dodging",
    "covering_face",
    "stepping_over",
    "guard_up",
)
"""SynDORBench's final action set (its appendix A.1.2), in the paper's order."""

ACTION_WORDS: dict[str, str] = {
    "standing": "standing",
    "walking": "walking",
    "crouching": "crouching",
    "guard_up": "guard up",
    "kicking": "kicking",
    "sneaking": "sneaking",
    "choking": "choking",
    "dodging": "dodging",
    "covering_face": "covering face with hands",
    "stepping_over": "stepping over something",
}
"""The answer text of each pose for the open action question (the paper's wording)."""


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The minimal rotation matrix turning unit vector ``a`` onto unit vector ``b``."""
    v = np.cross(a, b)
    c = float(a @ b)
    if c < -1 + 1e-9:  # opposite: turn 180° about any axis perpendicular to a
        axis = _unit(np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0]))
        return 2 * np.outer(axis, axis) - np.eye(3)
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1 + c)


def pose_table(pose: str) -> dict[str, np.ndarray]:
    """The bone directions of ``pose`` with ``.L`` entries mirrored to ``.R``."""
    if pose not in POSES:
        raise KeyError(f"unknown pose {pose!r} (known: {', '.join(sorted(POSES))})")
    table = {k: _unit(np.asarray(v, dtype=float)) for k, v in POSES[pose].items()}
    for k, v in list(table.items()):
        if k.endswith(".L"):
            table.setdefault(k[:-2] + ".R", v * np.array([-1.0, 1.0, 1.0]))
    return table


def posed_joints(
    pose: str,
    height_m: float = 1.75,
    rest: Mapping[str, tuple[str, Vec, Vec]] = REST_BONES,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``bone -> (head, tail)`` of the posed skeleton, scaled to ``height_m`` at rest,
    not yet stood on the ground (see :func:`figure_mesh`)."""
    table = pose_table(pose)
    scale = height_m / REST_HEIGHT_M
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rot: dict[str, np.ndarray] = {}
    for name, (parent, h, t) in rest.items():
        head0, tail0 = np.asarray(h, float) * scale, np.asarray(t, float) * scale
        d0 = tail0 - head0
        length = float(np.linalg.norm(d0))
        if parent:
            ph0 = np.asarray(rest[parent][1], float) * scale
            pt0 = np.asarray(rest[parent][2], float) * scale
            phead, ptail = out[parent]
            if np.allclose(head0, pt0, atol=1e-6):
                head = ptail
            else:
                head = phead + rot[parent] @ (head0 - ph0)
            parent_rot = rot[parent]
        else:
            head, parent_rot = head0, np.eye(3)
        if name in table:
            r = _rotation_between(_unit(d0), table[name])
        else:
            r = parent_rot
        rot[name] = r
        out[name] = (head, head + length * (r @ _unit(d0)))
    return out


def _radius(bone: str) -> float:
    return RADII.get(bone, RADII.get(bone.split(".")[0], 0.05))


def capsule(
    a: np.ndarray, b: np.ndarray, r: float, segments: int = 10, rings: int = 3
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Vertices and faces of a capsule whose *surface* spans a..b (ends inset by ``r``)."""
    axis = b - a
    length = float(np.linalg.norm(axis))
    z = axis / length if length > 1e-9 else np.array([0.0, 0.0, 1.0])
    if length > 2 * r:
        p0, p1 = a + z * r, b - z * r
    else:  # shorter than its diameter: a sphere at the middle
        p0 = p1 = (a + b) / 2
    x = _unit(np.cross(z, [1.0, 0, 0] if abs(z[0]) < 0.9 else [0, 1.0, 0]))
    y = np.cross(z, x)
    phis = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    circle = np.cos(phis)[:, None] * x + np.sin(phis)[:, None] * y
    rows = []
    # bottom hemisphere (from the pole up), then top hemisphere
    for i in range(1, rings + 1):
        th = np.pi / 2 * (1 - i / rings)  # angle below the equator
        rows.append(p0 - z * r * np.sin(th) + circle * r * np.cos(th))
    for i in range(0, rings):
        th = np.pi / 2 * i / rings
        rows.append(p1 + z * r * np.sin(th) + circle * r * np.cos(th))
    verts = np.vstack([p0 - z * r, *rows, p1 + z * r])
    faces: list[tuple[int, ...]] = []
    n = segments
    for j in range(n):  # bottom cap fan
        faces.append((0, 1 + (j + 1) % n, 1 + j))
    for ri in range(len(rows) - 1):
        s0, s1 = 1 + ri * n, 1 + (ri + 1) * n
        for j in range(n):
            faces.append((s0 + j, s0 + (j + 1) % n, s1 + (j + 1) % n, s1 + j))
    top = len(verts) - 1
    last = 1 + (len(rows) - 1) * n
    for j in range(n):
        faces.append((last + j, last + (j + 1) % n, top))
    return verts, faces


def hair_cap(head: np.ndarray, tail: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(a, b, radius)`` of a sphere a little larger than the head, set back from the face
    (the head's back is +Y turned with it): it covers the top, back and sides, leaves the face
    and adds under a centimetre to the figure's height (measured from the mesh, like all GT)."""
    up = _unit(tail - head)
    back = _unit(np.array([0.0, 1.0, 0.0]) - up[1] * up)
    c = (head + tail) / 2 + back * 0.25 * r
    return c, c, 1.08 * r


def figure_mesh(
    pose: str,
    height_m: float = 1.75,
    segments: int = 10,
    rest: Mapping[str, tuple[str, Vec, Vec]] = REST_BONES,
    face_bones: list[str] | None = None,
) -> tuple[np.ndarray, list[tuple[int, ...]], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """One mesh for the whole posed figure, standing on z = 0: ``(verts, faces, joints)``.
    When ``face_bones`` is a list, it receives each face's bone name (for materials)."""
    joints = posed_joints(pose, height_m, rest)
    scale = height_m / REST_HEIGHT_M
    all_v: list[np.ndarray] = []
    all_f: list[tuple[int, ...]] = []
    parts = [(bone, h, t, _radius(bone) * scale) for bone, (h, t) in joints.items()]
    parts.append(("hair", *hair_cap(*joints["spine.006"], _radius("spine.006") * scale)))
    for bone, h, t, r in parts:
        v, f = capsule(h, t, r, segments=segments)
        off = sum(len(x) for x in all_v)
        all_v.append(v)
        all_f.extend(tuple(i + off for i in face) for face in f)
        if face_bones is not None:
            face_bones.extend([bone] * len(f))
    verts = np.vstack(all_v)
    dz = -float(verts[:, 2].min())
    verts[:, 2] += dz
    lift = np.array([0.0, 0.0, dz])
    joints = {k: (h + lift, t + lift) for k, (h, t) in joints.items()}
    return verts, all_f, joints


PARTS: dict[str, str] = {
    "spine": "pants", "thigh": "pants", "shin": "pants",
    "spine.001": "shirt", "spine.002": "shirt", "spine.003": "shirt",
    "shoulder": "shirt", "upper_arm": "shirt", "forearm": "skin",
    "spine.004": "skin", "spine.005": "skin", "spine.006": "skin", "hand": "skin",
    "foot": "shoes", "toe": "shoes", "hair": "hair",
}  # fmt: skip
"""Which part of the outfit each bone's capsule wears (short sleeves: forearms are skin)."""


def part_of(bone: str) -> str:
    return PARTS.get(bone, PARTS.get(bone.split(".")[0], "shirt"))


def figure_height(pose: str, height_m: float = 1.75) -> float:
    """The posed figure's true height (m): top of its mesh above the ground."""
    v, _, _ = figure_mesh(pose, height_m)
    return float(v[:, 2].max())
