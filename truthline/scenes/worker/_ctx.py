"""The bpy side: what an environment's ``build``/``extract`` get as ``ctx``.

Runs only inside the scenes venv (bpy 5.0.1, numpy<2). Holds the per-frame Blender state
(reset by ``wm.read_factory_settings(use_empty=True)`` so no frame leaks into the next) and
the helpers every environment shares: materials, world and lights, primitives and meshes,
the camera from a CameraSpec/CameraPose/Effects, rendering (RGB PNG, linear EXR, Workbench
visible mask), evaluated-vertex projection and ray casts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bpy  # type: ignore[import-not-found]
import numpy as np

from truthline.scenes import _camera
from truthline.scenes._device import CyclesDevices
from truthline.scenes._gt import mask_stats  # noqa: F401  (re-exported for envs)
from truthline.scenes._types import CameraPose, CameraSpec, Effects, RenderSettings, SceneError

RGBA = tuple[float, float, float, float]
_DEVICES = CyclesDevices()  # GPU backends probed once per worker process


def _rgba(c: Sequence[float]) -> RGBA:
    return (float(c[0]), float(c[1]), float(c[2]), float(c[3]) if len(c) > 3 else 1.0)


class Ctx:
    """Per-frame Blender helpers (one instance per job)."""

    def __init__(self, settings: RenderSettings, seed: int | None):
        self.settings = settings
        self.seed = seed or 0
        self.mask_objects: list[str] = []
        """Names of the objects the visible mask shows white (the subject)."""
        self.workbench_color_type = "MATERIAL"
        """Workbench colour source for a Workbench main render (``TEXTURE`` for image
        textures: Workbench ignores them under ``MATERIAL``)."""
        self.spec: CameraSpec | None = None
        self.pose: CameraPose | None = None
        self.effects: Effects | None = None
        self.mask: np.ndarray | None = None
        """The visible mask (bool H×W) once rendered; ``extract`` may read it."""
        self.device: dict[str, Any] = {}
        """What the main render ran on: a :class:`~truthline.scenes._device.DeviceChoice`
        for Cycles; for Workbench (OpenGL) the GL renderer's name."""
        self.reset()

    # -- scene state -------------------------------------------------------------------
    def reset(self) -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        self.scene = bpy.context.scene
        self.scene.render.fps = 24
        self.scene.frame_set(1)
        # no date/time/render-time metadata in the files: the same image, the same bytes,
        # the same content hash
        r = self.scene.render
        for attr in dir(r):
            if attr.startswith("use_stamp"):
                setattr(r, attr, False)

    @property
    def res(self) -> tuple[int, int]:
        s, spec = self.settings, self.spec
        if s.res_x is not None and s.res_y is not None:
            return s.res_x, s.res_y
        if spec is None:
            raise SceneError("no camera set: call ctx.set_camera before rendering")
        return spec.res_x, spec.res_y

    def link(self, obj: Any) -> Any:
        self.scene.collection.objects.link(obj)
        return obj

    def material(
        self, name: str, color: Sequence[float], roughness: float = 0.6, metallic: float = 0.0
    ) -> Any:
        """A Principled material; also sets the viewport colour Workbench renders with."""
        m = bpy.data.materials.new(name)
        if m.node_tree is None:
            m.use_nodes = True
        bsdf = m.node_tree.nodes.get("Principled BSDF")
        bsdf.inputs["Base Color"].default_value = _rgba(color)
        bsdf.inputs["Roughness"].default_value = roughness
        bsdf.inputs["Metallic"].default_value = metallic
        m.diffuse_color = _rgba(color)
        return m

    def emission_material(self, name: str, color: Sequence[float], strength: float) -> Any:
        m = bpy.data.materials.new(name)
        if m.node_tree is None:
            m.use_nodes = True
        nodes = m.node_tree.nodes
        bsdf = nodes.get("Principled BSDF")
        bsdf.inputs["Emission Color"].default_value = _rgba(color)
        bsdf.inputs["Emission Strength"].default_value = strength
        bsdf.inputs["Base Color"].default_value = _rgba(color)
        m.diffuse_color = _rgba(color)
        return m

    def world(self, color: Sequence[float], strength: float = 1.0) -> Any:
        """A uniform world colour (cheap, controllable; the Sky texture blows out)."""
        w = bpy.data.worlds.new("World")
        self.scene.world = w
        if w.node_tree is None:
            w.use_nodes = True
        bg = w.node_tree.nodes.get("Background")
        bg.inputs[0].default_value = _rgba(color)
        bg.inputs[1].default_value = strength
        w.color = tuple(color[:3])
        return w

    def sun(
        self,
        strength_w_m2: float,
        azimuth_deg: float,
        elevation_deg: float,
        color: Sequence[float] = (1, 1, 1),
        angle_deg: float = 0.526,
        name: str = "Sun",
    ) -> Any:
        """A sun coming FROM azimuth/elevation (azimuth 0 = −Y, counter-clockwise)."""
        light = bpy.data.lights.new(name, "SUN")
        light.energy = strength_w_m2
        light.color = tuple(color[:3])
        light.angle = math.radians(angle_deg)
        obj = self.link(bpy.data.objects.new(name, light))
        src = np.array(_camera.orbit_position((0, 0, 0), 1.0, azimuth_deg, elevation_deg))
        obj.matrix_world = _look_matrix(src * 100, (0, 0, 0))
        return obj

    def point(
        self,
        location: Sequence[float],
        power_w: float,
        color: Sequence[float] = (1, 1, 1),
        radius_m: float = 0.1,
        name: str = "Lamp",
    ) -> Any:
        light = bpy.data.lights.new(name, "POINT")
        light.energy = power_w
        light.color = tuple(color[:3])
        light.shadow_soft_size = radius_m
        obj = self.link(bpy.data.objects.new(name, light))
        obj.location = tuple(location)
        return obj

    def mesh(
        self,
        name: str,
        verts: np.ndarray,
        faces: Sequence[Sequence[int]],
        material: Any = None,
        smooth: bool = True,
    ) -> Any:
        """One mesh object from numpy vertices (world coordinates) and faces."""
        me = bpy.data.meshes.new(name)
        me.from_pydata([tuple(map(float, v)) for v in verts], [], [tuple(f) for f in faces])
        me.update()
        if smooth:
            me.shade_smooth()
        if material is not None:
            me.materials.append(material)
        return self.link(bpy.data.objects.new(name, me))

    def box(
        self,
        name: str,
        center: Sequence[float],
        size: Sequence[float],
        material: Any = None,
        rotation_z_deg: float = 0.0,
    ) -> Any:
        """An axis-aligned (then turned about Z) box; no operators, so it is fast."""
        sx, sy, sz = (float(s) / 2 for s in size)
        v = np.array(
            [[x, y, z] for x in (-sx, sx) for y in (-sy, sy) for z in (-sz, sz)], dtype=float
        )
        c, s = math.cos(math.radians(rotation_z_deg)), math.sin(math.radians(rotation_z_deg))
        v = v @ np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]]) + np.asarray(center, float)
        faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        return self.mesh(name, v, faces, material, smooth=False)

    def plane(
        self,
        name: str,
        size_x: float,
        size_y: float,
        material: Any = None,
        center: Sequence[float] = (0, 0, 0),
    ) -> Any:
        cx, cy, cz = (float(c) for c in center)
        hx, hy = size_x / 2, size_y / 2
        v = np.array([[cx - hx, cy - hy, cz], [cx + hx, cy - hy, cz],
                      [cx + hx, cy + hy, cz], [cx - hx, cy + hy, cz]])  # fmt: skip
        return self.mesh(name, v, [(0, 1, 2, 3)], material, smooth=False)

    # -- camera --------------------------------------------------------------------------
    def set_camera(self, spec: CameraSpec, pose: CameraPose, effects: Effects) -> Any:
        self.spec, self.pose, self.effects = spec, pose, effects
        cam = bpy.data.cameras.new("Camera")
        cam.sensor_fit = "HORIZONTAL"
        cam.sensor_width = spec.sensor_w_mm
        cam.sensor_height = spec.sensor_w_mm * spec.res_y / spec.res_x
        cam.lens = spec.focal_mm
        cam.clip_start = 0.05
        cam.clip_end = 2000.0
        obj = self.link(bpy.data.objects.new("Camera", cam))
        self.scene.camera = obj
        obj.matrix_world = _matrix(_camera.camera_to_world(pose))
        if effects.dof:
            cam.dof.use_dof = True
            cam.dof.aperture_fstop = effects.fstop or spec.fstop or 2.8
            cam.dof.focus_distance = (
                effects.focus_distance_m
                or spec.focus_distance_m
                or float(np.linalg.norm(np.subtract(pose.look_at, pose.position)))
            )
        if effects.shake_deg > 0:
            self._shake(obj, effects.shake_deg)
        rx, ry = self.res
        r = self.scene.render
        r.resolution_x, r.resolution_y, r.resolution_percentage = rx, ry, 100
        r.pixel_aspect_x = r.pixel_aspect_y = 1.0
        return obj

    def _shake(self, obj: Any, shake_deg: float) -> None:
        """Hand-shake as in-render camera motion blur: two rotation keyframes ``shake_deg``
        apart about a seeded random axis across the shutter (Cycles only)."""
        rng = np.random.default_rng(self.seed)
        obj.rotation_mode = "XYZ"
        start = tuple(obj.rotation_euler)
        axis = rng.normal(size=2)
        axis = axis / np.linalg.norm(axis) * math.radians(shake_deg)
        obj.keyframe_insert("rotation_euler", frame=1)
        obj.rotation_euler = (start[0] + axis[0], start[1], start[2] + axis[1])
        obj.keyframe_insert("rotation_euler", frame=2)
        self.scene.frame_set(1)
        r = self.scene.render
        r.use_motion_blur = True
        r.motion_blur_shutter = 1.0
        r.motion_blur_position = "START"

    # -- geometry ------------------------------------------------------------------------
    def evaluated_vertices(self, obj: Any) -> np.ndarray:
        """World coordinates (N×3) of an object's evaluated mesh (modifiers applied)."""
        dg = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(dg)
        me = ev.to_mesh()
        try:
            co = np.empty(len(me.vertices) * 3)
            me.vertices.foreach_get("co", co)
        finally:
            ev.to_mesh_clear()
        m = np.array(obj.matrix_world)
        pts = co.reshape(-1, 3)
        return pts @ m[:3, :3].T + m[:3, 3]

    def project_points(self, pts: np.ndarray) -> np.ndarray:
        """``[x_px, y_px, depth]`` rows at the render resolution (see ``_camera.project``)."""
        if self.spec is None or self.pose is None:
            raise SceneError("no camera set")
        return _camera.project(pts, self.spec, self.pose, self.res)

    def object_bbox_px(self, obj: Any) -> list[float] | None:
        """Projected bbox ``[x0, y0, x1, y1]`` of an object's evaluated vertices (clipped)."""
        if self.spec is None or self.pose is None:
            raise SceneError("no camera set")
        return _camera.bbox_px(self.evaluated_vertices(obj), self.spec, self.pose, self.res)

    def ray_blocked(
        self, origin: Sequence[float], target: Sequence[float], ignore: Sequence[str] = ()
    ) -> bool:
        """True when something other than ``ignore`` lies between origin and target."""
        o = np.asarray(origin, float)
        d = np.asarray(target, float) - o
        dist = float(np.linalg.norm(d))
        dg = bpy.context.evaluated_depsgraph_get()
        hit, _loc, _n, _i, obj, _m = self.scene.ray_cast(
            dg, tuple(o), tuple(d / dist), distance=dist - 1e-4
        )
        return bool(hit and obj is not None and obj.name not in ignore)

    # -- rendering -----------------------------------------------------------------------
    def _engine(self) -> None:
        s, sc = self.settings, self.scene
        r = sc.render
        r.engine = s.engine
        r.threads_mode = "FIXED" if s.threads else "AUTO"
        if s.threads:
            r.threads = s.threads
        sc.view_settings.view_transform = (
            self.effects.view_transform if self.effects else "Standard"
        )
        sc.view_settings.look = "None"
        if s.engine == "CYCLES":
            c = sc.cycles
            prefs = bpy.context.preferences.addons["cycles"].preferences
            self.device = _DEVICES.apply(prefs, s.device).to_dict()
            c.device = "GPU" if self.device["type"] == "gpu" else "CPU"
            c.samples = s.spp
            c.seed = self.seed % (2**31)
            c.use_denoising = s.denoise is not None
            if s.denoise is not None:
                c.denoiser = "OPENIMAGEDENOISE"
                c.denoising_quality = s.denoise
                c.denoising_prefilter = "NONE" if s.denoise == "FAST" else "ACCURATE"
        else:
            sh = sc.display.shading
            sh.light = "STUDIO"
            sh.color_type = self.workbench_color_type
            sc.display.render_aa = "8"

    def render(self, out_dir: Path) -> dict[str, str]:
        """Render the main image (PNG; EXR too when asked); returns ``variant -> path``."""
        self._engine()
        bpy.ops.render.render(write_still=False)
        if self.settings.engine != "CYCLES":  # the GL context exists only after a render
            self.device = _gl_device(self.settings.device)
        img = bpy.data.images["Render Result"]
        files: dict[str, str] = {}
        st = self.scene.render.image_settings
        st.file_format, st.color_mode, st.color_depth, st.compression = "PNG", "RGB", "8", 15
        p = out_dir / "rgb.png"
        img.save_render(str(p), scene=self.scene)
        files["rgb"] = str(p)
        if self.settings.exr:
            st.file_format, st.color_mode, st.color_depth = "OPEN_EXR", "RGB", "32"
            st.exr_codec = "ZIP"
            p = out_dir / "linear.exr"
            img.save_render(str(p), scene=self.scene)
            files["linear"] = str(p)
        return files

    def render_mask(self, out_dir: Path) -> str:
        """The visible mask: Workbench, flat lighting, object colour (``mask_objects`` white,
        the rest black), no anti-aliasing, Standard view. Occlusion is accounted for."""
        sc = self.scene
        r = sc.render
        r.engine = "BLENDER_WORKBENCH"
        r.use_motion_blur = False
        r.dither_intensity = 0.0
        sc.view_settings.view_transform = "Standard"
        sc.view_settings.look = "None"
        sc.view_settings.exposure = 0.0
        sc.view_settings.gamma = 1.0
        sh = sc.display.shading
        sh.light = "FLAT"
        sh.color_type = "OBJECT"
        sh.show_shadows = False
        sh.show_cavity = False
        sh.show_object_outline = False
        sh.show_specular_highlight = False
        sc.display.render_aa = "OFF"
        if sc.world is None:
            sc.world = bpy.data.worlds.new("World")
        saved_world = tuple(sc.world.color)
        sc.world.color = (0.0, 0.0, 0.0)
        keep = set(self.mask_objects)
        for obj in sc.objects:
            obj.color = (1.0, 1.0, 1.0, 1.0) if obj.name in keep else (0.0, 0.0, 0.0, 1.0)
        bpy.ops.render.render(write_still=False)
        st = r.image_settings
        st.file_format, st.color_mode, st.color_depth, st.compression = "PNG", "BW", "8", 15
        p = out_dir / "mask.png"
        bpy.data.images["Render Result"].save_render(str(p), scene=sc)
        sc.world.color = saved_world
        from PIL import Image

        self.mask = np.asarray(Image.open(p).convert("L")) > 127
        return str(p)


def _gl_device(requested: str) -> dict[str, Any]:
    """Workbench draws with OpenGL: a GPU's driver, or Mesa's llvmpipe (``SOFTWARE``) on
    the CPU. ``--device`` is Cycles' choice and does not steer it."""
    try:
        import gpu  # type: ignore[import-not-found]

        kind = str(gpu.platform.device_type_get())
        renderer = str(gpu.platform.renderer_get())
    except Exception:  # no GL context: nothing to name
        kind, renderer = "", ""
    return {
        "requested": requested,
        "type": "cpu" if kind == "SOFTWARE" else ("gpu" if kind else "unknown"),
        "backend": "OPENGL",
        "devices": [renderer] if renderer else [],
    }


def _matrix(m: np.ndarray) -> Any:
    from mathutils import Matrix  # type: ignore[import-not-found]

    return Matrix([list(map(float, row)) for row in m])


def _look_matrix(position: Any, look_at: Any) -> Any:
    pose = CameraPose(tuple(map(float, position)), tuple(map(float, look_at)))
    return _matrix(_camera.camera_to_world(pose))
