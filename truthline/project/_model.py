"""The project definition: what is annotated, how, and how it is audited and benchmarked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)

from truthline._limits import MAX_RESAMPLES
from truthline._names import MAX_NAME, PROJECT_NAME
from truthline.fields import FieldSpec, FieldType
from truthline.project._layers import Layers

_INDEX = re.compile(r"\[[^\]]*\]")  # entity indices in a decision path: workers[P1]
SPDX_ID = re.compile(r"^(?:LicenseRef-[A-Za-z0-9.-]+|[A-Za-z0-9](?:[A-Za-z0-9.+-]*[A-Za-z0-9+])?)$")
"""What an SPDX licence identifier looks like (``CC-BY-4.0``, ``MIT``, ``Apache-2.0``,
``LicenseRef-acme``); the list itself (spdx.org/licenses) is not shipped."""


ReadRule = Literal[
    "nfc", "ws", "math_delims", "subsup_braces", "unicode_minus", "num_unit_space", "eq_space"
]
"""PHYSALIGN.md §6.3's reading normalization rules, in the order N applies them."""


def _resamples_within(n: int) -> int:
    """A resamples setting within MAX_RESAMPLES (a pydantic ValueError naming the limit)."""
    if n > MAX_RESAMPLES.value():
        raise ValueError(MAX_RESAMPLES.over(n))
    return n


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaxonomyClass(_Strict):
    code: str
    group: str
    name: str = ""
    description: str = ""


class Taxonomy(_Strict):
    """Classes with group codes; same-group confusions can earn partial credit (DWA)."""

    groups: dict[str, str] = {}
    classes: list[TaxonomyClass]
    group_credit: dict[str, float] = {}
    default_group_credit: float = Field(0.0, ge=0, le=1)
    note: str = ""

    def group_of(self, code: str) -> str | None:
        for c in self.classes:
            if c.code == code:
                return c.group
        return None


class MappedVariant(_Strict):
    """A prompt variant declared as a table (seeds/001 App. E.2's V2): its template, the
    grammar its answer comes in and, for a free-form (``text``) answer, the mapper model
    that maps the prose to the fields before scoring."""

    template: str
    answer: Literal["json", "text"] = "json"
    mapper: str | None = None
    """Model spec of the mapper (``openai:gpt-4o-mini``, ``simulated:mapper``)."""
    mapper_prompt: str | None = None
    """The mapper's user template, beside the definition (context: ``description``,
    ``fields``, ``taxonomies``, ``project``)."""


class Prompts(_Strict):
    """Prompt templates (Jinja2 files beside the definition)."""

    system: str | None = None
    user: str | None = None
    variants: dict[str, str] = {}
    """Benchmark prompt variants: name -> user template file. A variant given as a table
    (``[prompts.variants.v2] template = ...; answer = "text"; mapper = ...``) keeps its
    template here and the rest in ``mapped``."""
    mapped: dict[str, MappedVariant] = {}
    """Variants declared as tables, by name (filled from ``variants``; the loader reports
    their problems under ``prompts.variants.NAME``)."""

    @model_validator(mode="before")
    @classmethod
    def _split_tables(cls, data: Any) -> Any:
        """Keep ``variants`` name -> template for every reader; move tables to ``mapped``."""
        if not isinstance(data, dict) or not isinstance(data.get("variants"), dict):
            return data
        variants, mapped = {}, dict(data.get("mapped") or {})
        for name, v in data["variants"].items():
            if isinstance(v, dict):
                mapped[name] = v
                tpl = v.get("template")
                variants[name] = tpl if isinstance(tpl, str) else ""
            else:
                variants[name] = v
        return {**data, "variants": variants, "mapped": mapped}

    @model_serializer(mode="wrap")
    def _as_declared(self, handler: Any) -> Any:
        """Dump table variants back as tables in ``variants`` (the declared form), so a
        definition without them dumps exactly as before."""
        out = handler(self)
        if isinstance(out, dict):
            mapped = out.pop("mapped", None) or {}
            if mapped:
                out["variants"] = {**out.get("variants", {}), **mapped}
        return out

    def mapper_of(self, variant: str | None) -> MappedVariant | None:
        """The declaration of ``variant`` when its free-form answer is mapped (else None)."""
        spec = self.mapped.get(variant) if variant else None
        return spec if spec is not None and spec.answer == "text" and spec.mapper else None


class ImagePolicy(_Strict):
    max_side: int = Field(1024, gt=0)
    jpeg_quality: int = Field(85, ge=1, le=100)
    detail: Literal["auto", "low", "high"] = "auto"


class AuditSettings(_Strict):
    arm_split: float = Field(0.5, ge=0, le=1)
    """Share of items sent to the anchored arm (the rest are blind)."""
    blind_overlap: int = Field(2, ge=1)
    anchored_overlap: int = Field(1, ge=1)
    expert_sample_rate: float = Field(0.27, ge=0, le=1)
    gold_standard_rate: float = Field(0.0, ge=0, lt=1)
    """Share of each tier-1 queue (blind, anchored) made of gold-standard items with known
    answers, mixed in unmarked to score each annotator (0: none)."""
    override_rate_factor: float = Field(2.0, gt=0)
    """Flag an annotator whose override rate is below the team range's low end / this factor."""
    vlm_kappa_margin: float = 0.1
    """Flag when VLM-agreement kappa exceeds the retained team ceiling by more than this."""
    min_vlm_errors: int = Field(10, ge=1)
    """Zero productive overrides is a signal only over at least this many VLM errors."""
    resamples: int = Field(2000, ge=0)
    seed: int = 0
    fields: list[str] = []

    @field_validator("resamples")
    @classmethod
    def _bounded(cls, v: int) -> int:
        return _resamples_within(v)

    """Fields the audit reports on (default: every comparable field)."""


class Check(_Strict):
    metric: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float


class ConditionAxis(_Strict):
    column: str
    order: list[str]
    """Conditions by increasing severity; the first is the clear reference."""


class BenchmarkSettings(_Strict):
    target_fields: list[str] = []
    metrics: list[str] = ["accuracy", "macro_f1"]
    bootstrap_resamples: int = Field(2000, ge=0)
    seed: int = 0
    cluster: str | None = None

    @field_validator("bootstrap_resamples")
    @classmethod
    def _bounded(cls, v: int) -> int:
        return _resamples_within(v)

    """Metadata column naming an item's parent (video, problem) for cluster bootstrap."""
    strata: list[str] = []
    conditions: ConditionAxis | None = None
    checks: dict[str, Check] = {}
    """Diagnostic checks for DRS, e.g. naudc >= 0.85."""
    safety_field: str | None = None
    action_field: str | None = None
    confidence_field: str | None = None
    public_inputs: list[str] = []
    """Metadata columns a model may see; everything else stays private."""
    output_cap: int = Field(1024, gt=0)
    read_field: str | None = None
    """Four-way read/ground decomposition: the reading field ..."""
    ground_field: str | None = None
    """... and the grounding field, joined per item (and entity)."""
    balance: list[str] = []
    """Balanced aggregation: "parent" and/or one metadata column naming the item type."""
    environment: str | None = None
    """Metadata column the routing oracle routes by (default: the benchmark strata)."""
    transfer_column: str | None = None
    """Metadata column splitting items into the two sets of rank transfer."""
    hard_rule: str | None = None
    """Rule baseline whose failures define the hard subset (default: the run's first rule)."""
    given_as_truth: list[str] = []
    """+GT condition: fields whose verified gold is handed to the model as given (the probe's
    perception part, e.g. the reading), only where admissible (PHYSALIGN.md §5); falls back
    to ``action_field``."""
    questions: dict[str, list[str]] = {}
    """Questions asked one by one (SynDORBench asks presence and the action apart): prompt
    variant -> the top-level fields it asks and is scored on. A question asking one field is
    answered in that field's declared ``answer`` grammar (``json``, ``label``, ``digit``)."""
    read_rules: list[ReadRule] = []
    """Reading equality (PHYSALIGN.md §6.3): the read_field is correct iff N(answer) ==
    N(gold), N applying these rules in the spec's order."""


class Project(_Strict):
    name: str = Field(pattern=PROJECT_NAME, max_length=MAX_NAME)
    title: str = ""
    description: str = ""
    license: str | None = Field(None, validation_alias=AliasChoices("license", "licence"))
    """Licence of the media and labels a release carries (``license = "CC-BY-4.0"``): an
    SPDX identifier, or ``other`` with the terms in a LICENSE file beside the definition
    (a LICENSE file always wins in the dataset card)."""
    media: Literal["image", "video", "frames"]
    frames_per_item: int | None = Field(None, gt=0)
    fields: dict[str, dict[str, Any]]
    taxonomies: dict[str, Taxonomy] = {}
    strata: list[str] = []
    cluster: str | None = None
    prompts: Prompts = Prompts()
    image_policy: ImagePolicy = ImagePolicy()
    audit: AuditSettings = AuditSettings()
    benchmark: BenchmarkSettings = BenchmarkSettings()
    layers: Layers | None = None
    """Annotation layers: an item's entity count decides whether it asks the entity list
    (``_layers``; SteelBench Layer 1 / Layer 2)."""

    @field_validator("license")
    @classmethod
    def _spdx(cls, v: str | None) -> str | None:
        if v is None or v == "other" or SPDX_ID.match(v):
            return v
        raise ValueError(
            f"{v!r} is not an SPDX licence identifier: use one such as CC-BY-4.0, MIT or "
            'Apache-2.0 (https://spdx.org/licenses/), or "other" with a LICENSE file '
            "beside the project definition"
        )

    _source: Path | None = PrivateAttr(None)
    _specs: dict[str, FieldSpec] = PrivateAttr(default_factory=dict)
    _types: dict[str, FieldType] = PrivateAttr(default_factory=dict)

    # -- bound fields -----------------------------------------------------------------
    @property
    def source(self) -> Path | None:
        """The definition file this project was loaded from."""
        return self._source

    @property
    def root(self) -> Path | None:
        return self._source.parent if self._source else None

    @property
    def field_types(self) -> dict[str, FieldType]:
        """Top-level fields bound to their types, in declared order."""
        return self._bound()

    def _bound(self) -> dict[str, FieldType]:
        """``_types`` read from pydantic's private-attribute dict directly. Why: a private
        attribute read goes through ``BaseModel.__getattr__`` after a failed lookup (~1 µs,
        several per scored answer on the runner's hot path); the slot read is a dict get."""
        return self.__pydantic_private__["_types"]  # type: ignore[index]

    def field(self, path: str) -> FieldType:
        """A field by path; entity-list subfields as ``workers.action`` (indices ignored)."""
        clean = _INDEX.sub("", path) if "[" in path else path
        head, _, rest = clean.partition(".")
        types = self._bound()
        if head not in types:
            raise KeyError(f"project {self.name!r} has no field {path!r}")
        ft = types[head]
        if rest:
            subs = getattr(ft, "subfields", None)
            if not subs or rest not in subs:
                raise KeyError(f"project {self.name!r} has no field {path!r}")
            return subs[rest]
        return ft

    def question_fields(self, variant: str | None) -> list[str] | None:
        """The fields prompt variant ``variant`` asks when it is a declared question
        (``benchmark.questions``); None: it asks the benchmark's target fields."""
        asked = self.benchmark.questions.get(variant) if variant else None
        return list(asked) if asked else None

    def leaf_fields(self) -> dict[str, FieldType]:
        """Every non-entity field, entity subfields included as ``workers.action``."""
        out: dict[str, FieldType] = {}
        for name, ft in self._bound().items():
            subs = getattr(ft, "subfields", None)
            if subs is not None:
                for sub, st in subs.items():
                    out[f"{name}.{sub}"] = st
            else:
                out[name] = ft
        return out

    def prompt_path(self, rel: str) -> Path:
        """The template ``rel`` inside the project folder; one that resolves outside it
        (``..``, an absolute path, a symlink) is refused, as the loader refuses it."""
        from truthline.errors import TruthlineError

        base = (self.root or Path.cwd()).resolve()
        path = (base / rel).resolve()
        if not path.is_relative_to(base):
            where = self._source or base
            raise TruthlineError(
                f"{where}: prompt template {rel!r} is outside the project folder {base}; "
                "keep templates inside the folder of the definition"
            )
        return path
