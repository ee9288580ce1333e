"""Rendered scenes: a library of procedural Blender environments driven from the host.

The host (this package, numpy 2 fine) never imports bpy. It samples parameters, sends JSON
jobs to a long-lived Blender worker running in its own environment (bpy 5.0.1, numpy<2;
``python -m truthline.scenes.env --ensure``), stores the images by content hash and writes
one :class:`FrameRecord` per frame. See ``_types`` for the contract and how to add an
environment; ``_camera`` for the camera and DORI math.
"""

from truthline.scenes._render import Job, RenderReport, plan, render
from truthline.scenes._store import FrameStore
from truthline.scenes._types import (
    IMAGE_VARIANTS,
    SCHEMA_VERSION,
    Acceptability,
    BaseEnvironment,
    CameraPose,
    CameraSpec,
    Effects,
    Environment,
    FrameRecord,
    Grid,
    RenderSettings,
    SceneError,
    Target,
    WorkerError,
    canonical_json,
    environment,
    get_environment,
    job_key,
    register_environment,
)
from truthline.scenes._worker import WorkerClient

__all__ = [
    "IMAGE_VARIANTS",
    "SCHEMA_VERSION",
    "Acceptability",
    "BaseEnvironment",
    "CameraPose",
    "CameraSpec",
    "Effects",
    "Environment",
    "FrameRecord",
    "FrameStore",
    "Grid",
    "Job",
    "RenderReport",
    "RenderSettings",
    "SceneError",
    "Target",
    "WorkerClient",
    "WorkerError",
    "canonical_json",
    "environment",
    "get_environment",
    "job_key",
    "plan",
    "register_environment",
    "render",
]
