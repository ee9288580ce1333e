"""Which hardware Cycles renders on: a GPU when there is one, the CPU otherwise.

Blender's factory settings render Cycles on the CPU even on a machine with GPUs; choosing a
GPU means picking a compute backend in the Cycles add-on preferences
(``bpy.context.preferences.addons["cycles"].preferences``), enabling its devices and setting
``scene.cycles.device = "GPU"``. This module does the picking on that preferences object
alone (stdlib only, no bpy import), so the worker calls it and host tests drive it with a
stand-in. Backends are tried best first: OptiX (NVIDIA RTX), CUDA, HIP (AMD), Metal (Apple),
oneAPI (Intel). ``auto`` falls back to the CPU; ``gpu`` fails with a one-line error instead.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from truthline.scenes._types import SceneError

DeviceRequest = Literal["auto", "cpu", "gpu"]
DEVICE_REQUESTS: tuple[str, ...] = ("auto", "cpu", "gpu")
GPU_BACKENDS: tuple[str, ...] = ("OPTIX", "CUDA", "HIP", "METAL", "ONEAPI")
"""Cycles compute backends in order of preference."""


class NoGPUError(SceneError):
    """``--device gpu`` on a machine where Cycles finds no GPU."""


@dataclass(frozen=True)
class DeviceChoice:
    """What a frame was rendered on; stored in its frame record as ``device``."""

    requested: str
    type: Literal["cpu", "gpu"]
    backend: str
    """``CPU`` or the Cycles compute backend (``OPTIX``, ``CUDA``, ...)."""
    devices: tuple[str, ...] = field(default_factory=tuple)
    """Names of the GPU devices enabled (empty on the CPU)."""
    tried: tuple[str, ...] = field(default_factory=tuple)
    """Backends this build of Blender offered and that were probed."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["devices"], d["tried"] = list(self.devices), list(self.tried)
        return d


def check_request(device: str) -> DeviceRequest:
    """``device`` normalised to auto/cpu/gpu, or a one-line error naming the choices."""
    d = str(device).strip().lower()
    if d not in DEVICE_REQUESTS:
        raise SceneError(f"--device {device!r}: use auto, cpu or gpu")
    return d  # type: ignore[return-value]


def _devices_of(prefs: Any, backend: str) -> list[Any]:
    # refresh_devices() (Blender 2.93+) re-enumerates after a backend change; the list of
    # one backend also holds the CPU, which is not what "GPU" means here
    prefs.refresh_devices()
    return [d for d in prefs.get_devices_for_type(backend) if d.type != "CPU"]


def select_cycles_device(
    prefs: Any, requested: str, backends: tuple[str, ...] = GPU_BACKENDS
) -> DeviceChoice:
    """Configure ``prefs`` (the Cycles add-on preferences) for ``requested`` and say what
    was chosen. For a GPU, every device of the best backend is enabled and the CPU is left
    out (hybrid CPU+GPU rendering makes frame time depend on the CPU share). The caller sets
    ``scene.cycles.device`` to ``"GPU"`` or ``"CPU"`` from ``choice.type``."""
    want = check_request(requested)
    if want == "cpu":
        return DeviceChoice(requested=want, type="cpu", backend="CPU")
    tried: list[str] = []
    for backend in backends:
        try:
            prefs.compute_device_type = backend
        except (TypeError, ValueError):  # this Blender build has no such backend
            continue
        tried.append(backend)
        gpus = _devices_of(prefs, backend)
        if not gpus:
            continue
        for d in prefs.get_devices_for_type(backend):
            d.use = d.type != "CPU"
        return DeviceChoice(
            requested=want,
            type="gpu",
            backend=backend,
            devices=tuple(str(d.name) for d in gpus),
            tried=tuple(tried),
        )
    with contextlib.suppress(TypeError, ValueError):
        prefs.compute_device_type = "NONE"
    if want == "gpu":
        probed = ", ".join(tried) or "none offered by this Blender build"
        raise NoGPUError(
            f"--device gpu: Cycles found no GPU (backends probed: {probed}); "
            "use --device auto or cpu on this machine"
        )
    return DeviceChoice(requested=want, type="cpu", backend="CPU", tried=tuple(tried))


class CyclesDevices:
    """:func:`select_cycles_device` for a long-lived worker: the backends are probed once
    per process (probing loads each GPU driver library, and GPUs do not come and go between
    frames), and the choice is re-applied after every factory reset, which clears the
    preferences."""

    def __init__(self) -> None:
        self._found: dict[str, DeviceChoice] = {}

    def apply(self, prefs: Any, requested: str) -> DeviceChoice:
        want = check_request(requested)
        known = self._found.get("gpu" if want == "gpu" else "auto")
        if want == "cpu" or known is None:
            choice = select_cycles_device(prefs, want)
            if want != "cpu":
                self._found["auto"] = choice
                self._found["gpu"] = choice
            return choice
        if known.type == "cpu":
            if want == "gpu":  # the first probe found none: say so again, without re-probing
                return select_cycles_device(prefs, want, backends=known.tried)
            return DeviceChoice(requested=want, type="cpu", backend="CPU", tried=known.tried)
        again = select_cycles_device(prefs, want, backends=(known.backend,))
        return DeviceChoice(
            requested=want,
            type=again.type,
            backend=again.backend,
            devices=again.devices,
            tried=known.tried,
        )
