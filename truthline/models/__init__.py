"""The one model layer: spec strings, backend registry, clients, prompts, images, the
async runner with its cache in the ``responses`` table, and the declared price table.

Prefill and benchmark both call ``run_requests``; nothing else talks to a model.
"""

from truthline.models._check import check_model
from truthline.models._heap import frozen_heap
from truthline.models._images import data_url, encode_image, image_hash
from truthline.models._keys import request_key
from truthline.models._prices import PRICES, Price, price_for, price_known, register_price
from truthline.models._prompt import default_settings, item_requests, render_prompt
from truthline.models._registry import (
    Backend,
    Detection,
    FrameRef,
    backend,
    get_backend,
    registered_backends,
)
from truthline.models._runner import (
    RetryPolicy,
    arun_requests,
    cached_results,
    classify,
    results_summary,
    run_requests,
)
from truthline.models._spec import ModelSpec, parse_model_spec
from truthline.models._types import (
    INFRA_MISSING,
    MODEL_FAILURE,
    NOT_RUN,
    PARSED,
    Completion,
    EndpointFailingError,
    InfraError,
    ModelRequest,
    ModelResult,
)
from truthline.models._writer import Job

__all__ = [
    "INFRA_MISSING",
    "MODEL_FAILURE",
    "NOT_RUN",
    "PARSED",
    "PRICES",
    "Backend",
    "Completion",
    "Detection",
    "EndpointFailingError",
    "FrameRef",
    "InfraError",
    "Job",
    "ModelRequest",
    "ModelResult",
    "ModelSpec",
    "Price",
    "RetryPolicy",
    "arun_requests",
    "backend",
    "cached_results",
    "check_model",
    "classify",
    "data_url",
    "default_settings",
    "encode_image",
    "frozen_heap",
    "get_backend",
    "image_hash",
    "item_requests",
    "parse_model_spec",
    "price_for",
    "price_known",
    "register_price",
    "registered_backends",
    "render_prompt",
    "request_key",
    "results_summary",
    "run_requests",
]
