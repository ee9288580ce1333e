"""Which device Cycles renders on: the selection logic against a stand-in for Blender's
Cycles add-on preferences, then real renders in the scenes venv whose frame records say
which device made them (the CPU on a machine without a GPU)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from truthline.scenes import RenderSettings, SceneError, get_environment
from truthline.scenes._device import (
    CyclesDevices,
    NoGPUError,
    check_request,
    select_cycles_device,
)
from truthline.scenes._render import render
from truthline.scenes._store import FrameStore
from truthline.scenes._types import job_key

LINUX_BUILD = ("CUDA", "OPTIX", "HIP", "ONEAPI")  # what bpy 5.0.1 on Linux offers (no METAL)


@dataclass
class FakeDevice:
    name: str
    type: str
    use: bool = False


@dataclass
class FakeCyclesPrefs:
    """Behaves like ``bpy.context.preferences.addons["cycles"].preferences``: an enum that
    rejects backends the build lacks (TypeError, as bpy raises), devices listed per backend
    with the CPU among them, and a refresh after each backend change."""

    gpus: dict[str, list[str]] = field(default_factory=dict)
    offered: tuple[str, ...] = LINUX_BUILD
    refreshes: int = 0
    _type: str = "NONE"
    _lists: dict[str, list[FakeDevice]] = field(default_factory=dict)

    @property
    def compute_device_type(self) -> str:
        return self._type

    @compute_device_type.setter
    def compute_device_type(self, value: str) -> None:
        if value != "NONE" and value not in self.offered:
            raise TypeError(f'bpy_struct: item.attr = val: enum "{value}" not found')
        self._type = value

    def refresh_devices(self) -> None:
        self.refreshes += 1
        for b in self.offered:
            if b not in self._lists:
                self._lists[b] = [FakeDevice(n, b) for n in self.gpus.get(b, [])] + [
                    FakeDevice("AMD EPYC", "CPU", use=True)
                ]

    def get_devices_for_type(self, backend: str) -> list[FakeDevice]:
        return self._lists.get(backend, [])

    def factory_reset(self) -> None:
        """What ``wm.read_factory_settings`` does to the preferences."""
        self._type = "NONE"
        self._lists.clear()


def test_the_best_backend_wins_and_only_its_gpus_are_used():
    prefs = FakeCyclesPrefs(gpus={"CUDA": ["H100 a", "H100 b"], "OPTIX": ["H100 a", "H100 b"]})
    c = select_cycles_device(prefs, "auto")
    assert (c.type, c.backend, c.devices) == ("gpu", "OPTIX", ("H100 a", "H100 b"))
    assert prefs.compute_device_type == "OPTIX"
    used = {(d.name, d.type): d.use for d in prefs.get_devices_for_type("OPTIX")}
    assert used == {
        ("H100 a", "OPTIX"): True,
        ("H100 b", "OPTIX"): True,
        ("AMD EPYC", "CPU"): False,
    }
    assert c.to_dict()["devices"] == ["H100 a", "H100 b"]


def test_a_gpu_of_a_lesser_backend_is_found_and_missing_backends_are_skipped():
    # an AMD card: no NVIDIA runtime, so OptiX and CUDA list no device; a Mac-only backend
    # (METAL) is not in this build and is skipped, not an error
    prefs = FakeCyclesPrefs(gpus={"HIP": ["Radeon Pro W7900"]})
    c = select_cycles_device(prefs, "gpu")
    assert (c.type, c.backend, c.devices) == ("gpu", "HIP", ("Radeon Pro W7900",))
    assert c.tried == ("OPTIX", "CUDA", "HIP")
    mac = FakeCyclesPrefs(gpus={"METAL": ["Apple M3 Max"]}, offered=("METAL",))
    assert select_cycles_device(mac, "auto").backend == "METAL"


def test_auto_falls_back_to_the_cpu_and_gpu_fails_in_one_line():
    prefs = FakeCyclesPrefs()
    c = select_cycles_device(prefs, "auto")
    assert (c.type, c.backend, c.devices) == ("cpu", "CPU", ())
    assert c.tried == ("OPTIX", "CUDA", "HIP", "ONEAPI")  # best first, as offered
    assert prefs.compute_device_type == "NONE"  # nothing left half-configured
    with pytest.raises(NoGPUError) as exc:
        select_cycles_device(prefs, "gpu")
    msg = str(exc.value)
    assert "\n" not in msg and "OPTIX, CUDA, HIP, ONEAPI" in msg
    assert "--device auto or cpu" in msg
    assert isinstance(exc.value, SceneError)


def test_cpu_does_not_touch_the_preferences():
    prefs = FakeCyclesPrefs(gpus={"CUDA": ["A100"]})
    c = select_cycles_device(prefs, "cpu")
    assert (c.type, c.backend, prefs.refreshes, prefs.compute_device_type) == (
        "cpu",
        "CPU",
        0,
        "NONE",
    )


def test_a_worker_probes_once_and_reapplies_after_each_factory_reset():
    prefs = FakeCyclesPrefs(gpus={"CUDA": ["L4"]})
    dev = CyclesDevices()
    first = dev.apply(prefs, "auto")
    probes = prefs.refreshes
    for _ in range(3):
        prefs.factory_reset()  # every frame starts from factory settings
        again = dev.apply(prefs, "auto")
        assert again == first and prefs.compute_device_type == "CUDA"
        assert [d.use for d in prefs.get_devices_for_type("CUDA")] == [True, False]
    assert prefs.refreshes - probes == 3  # one refresh per frame for CUDA, no re-probing

    none = FakeCyclesPrefs()
    dev = CyclesDevices()
    assert dev.apply(none, "auto").type == "cpu"
    probes = none.refreshes
    assert dev.apply(none, "auto").type == "cpu" and none.refreshes == probes  # remembered
    with pytest.raises(NoGPUError):
        dev.apply(none, "gpu")


def test_device_requests_are_checked_and_do_not_change_the_frame_identity():
    assert check_request(" GPU ") == "gpu"
    with pytest.raises(SceneError, match=r"--device 'tpu': use auto, cpu or gpu"):
        check_request("tpu")
    with pytest.raises(SceneError, match="render device"):
        RenderSettings(device="tpu")
    keys = {
        job_key("dori", "1", {"a": 1}, 0, RenderSettings(device=d, threads=t))
        for d in ("auto", "cpu", "gpu")
        for t in (0, 4)
    }
    assert len(keys) == 1  # a frame rendered on the CPU is not redone for --device gpu
    with pytest.raises(SceneError, match="threads"):
        RenderSettings(threads=-1)


# -- real renders (scenes venv) ---------------------------------------------------------------
TINY = dict(engine="CYCLES", spp=1, res_x=64, res_y=36, denoise=None, mask=False)


def _frame() -> list[dict[str, Any]]:
    return list(get_environment("dori").grid("tiny"))[:1]  # type: ignore[attr-defined]


def test_a_cycles_frame_records_the_device_it_ran_on(worker, tmp_path):
    rep = render("dori", _frame(), tmp_path / "cpu", RenderSettings(device="cpu", **TINY),
                 client=worker)  # fmt: skip
    assert (rep.rendered, rep.failed) == (1, [])
    rec = next(FrameStore(tmp_path / "cpu").records())  # read back from the store
    assert rec.device["requested"] == "cpu"
    assert (rec.device["type"], rec.device["backend"], rec.device["devices"]) == ("cpu", "CPU", [])
    assert rec.device["threads"] >= 1  # Blender's actual thread count (AUTO: every core)
    assert rec.worker["pid"] == worker.pid and rec.worker["host"]

    auto = render("dori", _frame(), tmp_path / "auto", RenderSettings(**TINY), client=worker)
    dev = auto.records[0].device
    assert dev["requested"] == "auto" and dev["type"] in ("cpu", "gpu")
    assert (dev["type"] == "cpu") == (dev["backend"] == "CPU") == (dev["devices"] == [])
    if dev["type"] == "cpu":  # this machine has no GPU Cycles can use: gpu must say so
        assert "CUDA" in dev["tried"] and "OPTIX" in dev["tried"]
        with pytest.raises(NoGPUError, match="found no GPU"):
            render("dori", _frame(), tmp_path / "gpu", RenderSettings(device="gpu", **TINY),
                   client=worker)  # fmt: skip
        assert not list(FrameStore(tmp_path / "gpu").records())
    else:  # a GPU machine: gpu renders there too
        rep = render("dori", _frame(), tmp_path / "gpu", RenderSettings(device="gpu", **TINY),
                     client=worker)  # fmt: skip
        assert rep.records[0].device["backend"] == dev["backend"]


def test_a_workbench_frame_records_opengl(worker, tmp_path):
    s = RenderSettings(engine="BLENDER_WORKBENCH", res_x=64, res_y=36, mask=False)
    rec = render("dori", _frame(), tmp_path, s, client=worker).records[0]
    assert rec.device["backend"] == "OPENGL" and rec.device["type"] in ("cpu", "gpu")
    assert rec.device["devices"] and rec.device["devices"][0]  # e.g. "llvmpipe (LLVM 15...)"


def test_scenes_render_takes_device_and_refuses_a_bad_one(scenes_env, tmp_path):
    from typer.testing import CliRunner

    from truthline.cli import app

    args = ["scenes", "render", "dori", "--limit", "1", "--res", "64x36", "--spp", "1",
            "--denoise", "none", "--out", str(tmp_path), "--json"]  # fmt: skip
    bad = CliRunner().invoke(app, [*args, "--device", "tpu"])
    assert bad.exit_code != 0 and "use auto, cpu or gpu" in str(bad.exception)
    ok = CliRunner().invoke(app, [*args, "--device", "cpu"])
    assert ok.exit_code == 0, ok.output
    assert '"devices": [\n    "CPU"\n  ]' in ok.output or '"devices": ["CPU"]' in ok.output
