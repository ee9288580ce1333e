"""``hf:/path/to/model`` — a local transformers image-text-to-text model (offline).

Loaded with ``AutoProcessor`` + ``AutoModelForImageTextToText`` from a local folder
(``local_files_only``; nothing downloads). Requests are batched (option ``batch``,
default 4) into one padded ``generate`` call run in a worker thread; device ``cuda``
when available unless ``device=cpu``. Greedy decoding unless a temperature is set; an
answer that hits ``max_tokens`` without an end token is reported as truncated.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.models._image_cache import ImageCache, default_image_cache_dir, memory_cache
from truthline.models._images import load_pil
from truthline.models._registry import Backend, backend
from truthline.models._types import Completion, InfraError, ModelRequest


@backend("hf")
class HFBackend(Backend):
    max_concurrency = 1

    def __init__(self, spec):
        super().__init__(spec)
        if not Path(spec.name).is_dir():
            raise TruthlineError(
                f"model spec {spec.text!r}: {spec.name} is not a local model folder "
                "(hf: loads local files only; download the model first)"
            )
        self.batch_size = spec.opt_int("batch", 4)
        self._model: Any = None
        self._proc: Any = None
        self._lock = threading.Lock()
        self.images = memory_cache()

    def bind(self, store: Any) -> None:
        """Images are encoded once per workspace (kept in its ``image-cache/``)."""
        super().bind(store)
        self.images = ImageCache(default_image_cache_dir(store))

    async def aclose(self) -> None:
        self.images.flush()  # the sources found sent as they are, for the next run

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            try:
                import torch
                from transformers import AutoModelForImageTextToText, AutoProcessor
            except ImportError as exc:
                raise TruthlineError(
                    f"hf: models need the 'vlm' extra (pip install truthline[vlm]): {exc}"
                ) from None
            dev = self.spec.opt("device") or ("cuda" if torch.cuda.is_available() else "cpu")
            self._proc = AutoProcessor.from_pretrained(self.spec.name, local_files_only=True)
            model: Any = AutoModelForImageTextToText.from_pretrained(
                self.spec.name, local_files_only=True
            )
            self._model = model.to(dev).eval()
            self._device = dev
            tok = getattr(self._proc, "tokenizer", None)
            if tok is not None:
                tok.padding_side = "left"

    def _generate(self, reqs: Sequence[ModelRequest]) -> list[Completion | InfraError]:
        import torch

        self._load()
        proc, model = self._proc, self._model
        texts, images = [], []
        for r in reqs:
            content: list[dict[str, Any]] = [{"type": "image"} for _ in r.images]
            content.append({"type": "text", "text": r.user})
            msgs = []
            if r.system:
                msgs.append({"role": "system", "content": [{"type": "text", "text": r.system}]})
            msgs.append({"role": "user", "content": content})
            texts.append(proc.apply_chat_template(msgs, add_generation_prompt=True))
            policy = r.settings.get("image_policy") or {}
            images.append([load_pil(p, policy, self.images) for p in r.images])
        flat = [im for ims in images for im in ims]
        inputs = proc(text=texts, images=flat or None, return_tensors="pt", padding=True)
        inputs = inputs.to(self._device)
        s = reqs[0].settings
        cap = int(s.get("max_tokens") or 256)
        temp = float(s.get("temperature") or 0.0)
        gen_kw: dict[str, Any] = {"max_new_tokens": cap, "do_sample": temp > 0}
        if temp > 0:
            gen_kw["temperature"] = temp
        with torch.inference_mode():
            out = model.generate(**inputs, **gen_kw)
        n_in = inputs["input_ids"].shape[1]
        mask = inputs.get("attention_mask")
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        pad = getattr(model.generation_config, "pad_token_id", None)
        results: list[Completion | InfraError] = []
        for i in range(len(reqs)):
            new = out[i, n_in:].tolist()
            ended = any(t in eos_ids for t in new)
            if ended:
                new = new[: next(j for j, t in enumerate(new) if t in eos_ids)]
            new = [t for t in new if t != pad]
            text = proc.decode(new, skip_special_tokens=True)
            tin = int(mask[i].sum()) if mask is not None else n_in
            results.append(
                Completion(
                    text=text,
                    finish_reason="stop" if ended or len(new) < cap else "length",
                    tokens_in=tin,
                    tokens_out=len(new),
                )
            )
        return results

    async def complete_batch(
        self, requests: Sequence[ModelRequest]
    ) -> list[Completion | InfraError]:
        # Requests with different decoding settings cannot share one generate call.
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            key = f"{r.settings.get('max_tokens')}|{r.settings.get('temperature')}"
            groups.setdefault(key, []).append(i)
        out: list[Completion | InfraError] = [InfraError("client_error")] * len(requests)
        for idx in groups.values():
            comps: list[Completion | InfraError]
            try:
                comps = await asyncio.to_thread(self._generate, [requests[i] for i in idx])
            except TruthlineError:
                raise
            except RuntimeError as exc:  # e.g. CUDA out of memory: infrastructure, not the model
                err = InfraError("runtime_error", str(exc)[:200], retry=False)
                comps = [err] * len(idx)
            for i, c in zip(idx, comps, strict=True):
                out[i] = c
        return out

    def describe(self) -> str:
        return f"{self.spec.alias} (transformers, local)"
