"""Loading and validating project definitions (TOML or YAML).

Every problem is collected and reported at once, each with the file and the dotted
field path, e.g. ``project.toml: fields.workers.fields.action.taxonomy: unknown taxonomy 'acts'``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from truthline._limits import MAX_DEFINITION_BYTES, MAX_YAML_NODES, read_capped
from truthline.errors import ProjectError, TruthlineError
from truthline.fields import (
    EntityListSpec,
    FieldSpec,
    bind_grammar,
    get_field_type,
    grammar_problem,
    registered_field_types,
)
from truthline.project._layers import layer_problems
from truthline.project._model import Project

DEFINITION_NAMES = ("project.toml", "project.yaml", "project.yml")

FIELD_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$")
"""Field names: '.' and '[' would break field paths such as ``workers[P3].action``."""


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def _pyd_problems(exc: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for err in exc.errors():
        path = _loc(err["loc"])
        if path.startswith("prompts.mapped."):  # a table variant is declared in variants
            path = "prompts.variants." + path.removeprefix("prompts.mapped.")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown setting (check the spelling)"
        out.append((f"{prefix}.{path}" if prefix and path else prefix or path, msg))
    return out


def find_definition(path: Path) -> Path:
    """The definition file for ``path`` (a file, or a folder holding project.toml/yaml)."""
    if path.is_dir():
        for name in DEFINITION_NAMES:
            if (path / name).is_file():
                return path / name
        raise ProjectError(str(path), [("", "no project.toml or project.yaml in this folder")])
    if path.exists() and not path.is_file():
        raise ProjectError(str(path), [("", "not a regular file (a device or a pipe)")])
    if not path.is_file():
        raise ProjectError(str(path), [("", "file not found")])
    return path


def _yaml_duplicates(node: Any, path: str, problems: list[tuple[str, str]]) -> None:
    """Every key given twice in one YAML mapping (PyYAML silently keeps the last one)."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for knode, vnode in node.value:
            key = knode.value if isinstance(knode, yaml.ScalarNode) else None
            sub = f"{path}.{key}" if path else str(key)
            if key is not None:
                line = knode.start_mark.line + 1
                if key in seen:
                    problems.append(
                        (sub, f"duplicate key (line {line}; first given on line {seen[key]})")
                    )
                else:
                    seen[key] = line
            _yaml_duplicates(vnode, sub, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_duplicates(item, f"{path}.{i}" if path else str(i), problems)


MAX_DEPTH = 64
"""How deep a definition may nest (real ones need about six levels); deeper input would
only exhaust the parsers' recursion."""


def _yaml_size(file: Path, root: Any) -> None:
    """Refuse a YAML document whose node tree, aliases expanded, is over MAX_YAML_NODES or
    MAX_DEPTH: an alias bomb (``a: &a [x, x]``, ``b: &b [*a, *a]``, ...) composes to a few
    nodes but expands to billions when built and validated."""
    cap = MAX_YAML_NODES.value()
    stack: list[tuple[Any, int]] = [(root, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > cap:
            raise ProjectError(
                str(file),
                [
                    (
                        "",
                        f"more than {cap} YAML nodes once aliases are expanded (an alias bomb?); "
                        f"set {MAX_YAML_NODES.env} to raise the limit",
                    )
                ],
            )
        if depth > MAX_DEPTH:
            raise ProjectError(
                str(file),
                [("", f"nested more than {MAX_DEPTH} levels deep (or an alias refers to itself)")],
            )
        if isinstance(node, yaml.MappingNode):
            stack.extend((n, depth + 1) for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((n, depth + 1) for n in node.value)


def _depth_ok(file: Path, data: Any) -> None:
    """Refuse parsed data nested deeper than MAX_DEPTH (TOML arrays of arrays)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ProjectError(str(file), [("", f"nested more than {MAX_DEPTH} levels deep")])
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _load_yaml(file: Path, text: str) -> Any:
    problems: list[tuple[str, str]] = []
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    _yaml_size(file, root)
    _yaml_duplicates(root, "", problems)
    if problems:
        raise ProjectError(str(file), problems)
    return yaml.safe_load(text)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line: what is wrong, and where."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem:
        return " ".join(str(exc).split())
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    context = getattr(exc, "context", None)
    return f"{context + ': ' if context else ''}{problem}{where}"


def _read_text(file: Path) -> str:
    """The definition's text, at most MAX_DEFINITION_BYTES of it, as UTF-8."""
    try:
        data = read_capped(file, MAX_DEFINITION_BYTES, "project definition")
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProjectError(
            str(file), [("", f"not UTF-8 text (byte {exc.start}); save it as UTF-8")]
        ) from None
    except OSError as exc:
        raise ProjectError(str(file), [("", f"cannot read: {exc.strerror or exc}")]) from None
    except TruthlineError as exc:
        raise ProjectError(str(file), [("", str(exc).removeprefix(f"{file}: "))]) from None


def read_raw(file: Path) -> dict[str, Any]:
    text = _read_text(file)
    try:
        if file.suffix == ".toml":
            data = tomllib.loads(text)
        elif file.suffix in (".yaml", ".yml"):
            data = _load_yaml(file, text)
        else:
            raise ProjectError(str(file), [("", "expected a .toml, .yaml or .yml file")])
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(str(file), [("", f"invalid TOML: {exc}")]) from None
    except yaml.YAMLError as exc:
        raise ProjectError(str(file), [("", f"invalid YAML: {_yaml_reason(exc)}")]) from None
    except RecursionError:
        raise ProjectError(str(file), [("", f"nested more than {MAX_DEPTH} levels deep")]) from None
    _depth_ok(file, data)
    if not isinstance(data, dict):
        raise ProjectError(str(file), [("", "the definition must be a table/mapping at top level")])
    return data


def _validate_spec(
    raw: Any, path: str, problems: list[tuple[str, str]], depth: int = 0
) -> FieldSpec | None:
    if not isinstance(raw, dict):
        problems.append((path, "a field must be a table with at least a 'type'"))
        return None
    ftype = raw.get("type")
    if ftype is None:
        problems.append(
            (f"{path}.type", "missing; one of " + ", ".join(sorted(registered_field_types())))
        )
        return None
    try:
        cls = get_field_type(ftype)
    except KeyError as exc:
        problems.append((f"{path}.type", str(exc.args[0])))
        return None
    try:
        spec = cls.Spec.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_pyd_problems(exc, path))
        return None
    if isinstance(spec, EntityListSpec):
        if depth > 0:
            problems.append((path, "entity lists cannot be nested"))
            return None
        if not spec.fields:
            problems.append((f"{path}.fields", "an entity list needs at least one subfield"))
        subs: dict[str, Any] = {}
        for name, sub in spec.fields.items():
            _check_field_name(name, f"{path}.fields.{name}", problems)
            v = _validate_spec(sub, f"{path}.fields.{name}", problems, depth + 1)
            if v is not None:
                subs[name] = v
        spec.fields = subs
        if spec.key and spec.key not in spec.fields:
            problems.append((f"{path}.key", f"key {spec.key!r} is not one of its subfields"))
        if spec.match_region:
            r = spec.fields.get(spec.match_region)
            if r is None or r.type != "region":
                problems.append(
                    (f"{path}.match_region", f"{spec.match_region!r} is not a region subfield")
                )
    return spec


def _check_field_name(name: str, path: str, problems: list[tuple[str, str]]) -> None:
    if not FIELD_NAME.match(name):
        problems.append(
            (
                path,
                "invalid field name: use letters, digits, '_' and '-' (at most 100 characters); "
                "'.' and '[' separate parts of field paths such as workers[P3].action",
            )
        )


def _check_choice(
    spec: FieldSpec, path: str, project: Project, problems: list[tuple[str, str]]
) -> None:
    choices = getattr(spec, "choices", None)
    taxonomy = getattr(spec, "taxonomy", None)
    if spec.type not in ("single_choice", "multi_choice"):
        return
    if not choices and not taxonomy:
        problems.append((path, "a choice field needs 'choices' or 'taxonomy'"))
    if taxonomy and taxonomy not in project.taxonomies:
        known = ", ".join(sorted(project.taxonomies)) or "none declared"
        problems.append((f"{path}.taxonomy", f"unknown taxonomy {taxonomy!r} (known: {known})"))
    if choices and len(set(choices)) != len(choices):
        problems.append((f"{path}.choices", "duplicate choices"))
    cannot = getattr(spec, "cannot_tell", None)
    if cannot is not None:
        tax = project.taxonomies.get(taxonomy) if taxonomy else None
        codes = [c.code for c in tax.classes] if tax else []
        clash = next(
            (c for c in [*(choices or []), *codes] if c.casefold() == cannot.casefold()), None
        )
        if clash is not None:
            problems.append(
                (
                    f"{path}.cannot_tell",
                    f"{cannot!r} is also a choice ({clash!r}): a 'cannot tell' answer must be "
                    'a value of its own, e.g. cannot_tell = "cannot_tell"',
                )
            )
        elif not cannot.strip():
            problems.append((f"{path}.cannot_tell", "empty; name the 'cannot tell' value"))


_SPEC = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*:\S")
"""What a model spec starts with (``KIND:NAME``); the model layer parses the rest."""


def _check_mapped(project: Project, problems: list[tuple[str, str]]) -> None:
    """A table variant with a free-form answer names its mapper and the mapper's prompt;
    a mapper maps only free-form text."""
    for name, m in project.prompts.mapped.items():
        where = f"prompts.variants.{name}"
        if m.answer == "text" and not m.mapper:
            problems.append(
                (
                    f"{where}.mapper",
                    'a free-form (answer = "text") variant needs a mapper: the model spec '
                    'that maps its prose to the fields, e.g. mapper = "openai:gpt-4o-mini"',
                )
            )
        if m.mapper and m.answer != "text":
            problems.append(
                (f"{where}.answer", 'a mapper maps free-form answers: set answer = "text"')
            )
        if m.mapper and not _SPEC.match(m.mapper):
            problems.append(
                (
                    f"{where}.mapper",
                    f"{m.mapper!r} is not a model spec (KIND:NAME, e.g. openai:gpt-4o-mini "
                    "or simulated:mapper)",
                )
            )
        if m.mapper and not m.mapper_prompt:
            problems.append(
                (f"{where}.mapper_prompt", "name the mapper's prompt template (a file path)")
            )
        if m.answer == "text" and name in project.benchmark.questions:
            problems.append(
                (f"benchmark.questions.{name}", "a free-form variant cannot be a question")
            )


def _template_problem(base: Path, rel: str) -> str | None:
    """Why prompt template ``rel`` cannot be used, or None. A template is sent to models and
    stored with every request, so it must lie inside the project folder (symlinks resolved):
    ``../../.ssh/id_rsa`` or ``/etc/shadow`` would put a secret into prompts."""
    root = base.resolve()
    target = (base / rel).resolve()
    if not target.is_relative_to(root):
        return (
            f"prompt template {rel!r} is outside the project folder {root} (it resolves to "
            f"{target}); keep templates inside the folder of the definition"
        )
    if not target.is_file():
        return f"prompt template {rel!r} not found beside the definition"
    return None


def validate_data(data: dict[str, Any], file: str, base: Path | None = None) -> Project:
    """Validate a raw definition mapping; raises ProjectError listing every problem."""
    problems: list[tuple[str, str]] = []
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        raise ProjectError(file, _pyd_problems(exc)) from None

    for tname, tax in project.taxonomies.items():
        seen: set[str] = set()
        for i, cls in enumerate(tax.classes):
            if tax.groups and cls.group not in tax.groups:
                problems.append(
                    (
                        f"taxonomies.{tname}.classes.{i}.group",
                        f"unknown group {cls.group!r} (declared: {', '.join(tax.groups)})",
                    )
                )
            if cls.code in seen:
                problems.append(
                    (f"taxonomies.{tname}.classes.{i}.code", f"duplicate class code {cls.code!r}")
                )
            seen.add(cls.code)
        for g, w in tax.group_credit.items():
            if tax.groups and g not in tax.groups:
                problems.append((f"taxonomies.{tname}.group_credit.{g}", f"unknown group {g!r}"))
            if not 0 <= w <= 1:
                problems.append(
                    (f"taxonomies.{tname}.group_credit.{g}", "partial credit must be in [0, 1]")
                )

    if not project.fields:
        problems.append(("fields", "declare at least one field"))
    specs: dict[str, FieldSpec] = {}
    grammars: dict[str, str] = {}
    for name, raw in project.fields.items():
        _check_field_name(name, f"fields.{name}", problems)
        # ``answer``: the grammar of a question asking this field alone (fields._answer)
        grammar = raw.get("answer") if isinstance(raw, dict) else None
        if isinstance(raw, dict):
            raw = {k: v for k, v in raw.items() if k != "answer"}
        spec = _validate_spec(raw, f"fields.{name}", problems)
        if spec is None:
            continue
        specs[name] = spec
        if grammar is not None:
            problem = grammar_problem(spec.type, grammar)
            if problem:
                problems.append((f"fields.{name}.answer", problem))
            else:
                grammars[name] = grammar
        subs = spec.fields.items() if isinstance(spec, EntityListSpec) else []
        _check_choice(spec, f"fields.{name}", project, problems)
        for sname, sspec in subs:
            _check_choice(sspec, f"fields.{name}.fields.{sname}", project, problems)

    if len(set(project.strata)) != len(project.strata):
        problems.append(("strata", "duplicate strata columns"))
    if project.media == "frames" and project.frames_per_item is None:
        pass  # any number of frames per item is allowed

    if not problems:
        project._specs = specs
        project._types = {
            n: get_field_type(s.type)(n, s, project.taxonomies) for n, s in specs.items()
        }
        for n, g in grammars.items():
            bind_grammar(project._types[n], g)
        leaves = project.leaf_fields()
        for i, t in enumerate(project.benchmark.target_fields):
            if t not in leaves and t not in project._types:
                problems.append((f"benchmark.target_fields.{i}", f"unknown field {t!r}"))
        for i, t in enumerate(project.audit.fields):
            if t not in leaves and t not in project._types:
                problems.append((f"audit.fields.{i}", f"unknown field {t!r}"))
        for key in (
            "safety_field",
            "action_field",
            "confidence_field",
            "read_field",
            "ground_field",
        ):
            ref = getattr(project.benchmark, key)
            if ref and ref not in leaves:
                problems.append((f"benchmark.{key}", f"unknown field {ref!r}"))
        for q, asked in project.benchmark.questions.items():
            if q not in project.prompts.variants:
                problems.append(
                    (f"benchmark.questions.{q}", f"no prompt variant {q!r} in [prompts] variants")
                )
            if not asked:
                problems.append((f"benchmark.questions.{q}", "name the fields it asks"))
            for i, t in enumerate(asked):
                if t not in project._types:
                    problems.append((f"benchmark.questions.{q}.{i}", f"unknown field {t!r}"))
        if project.benchmark.conditions and not project.benchmark.conditions.order:
            problems.append(("benchmark.conditions.order", "list the conditions, clearest first"))
        if project.layers is not None:
            problems += layer_problems(project, project.layers)

    _check_mapped(project, problems)
    if base is not None:
        refs = [("prompts.system", project.prompts.system), ("prompts.user", project.prompts.user)]
        refs += [
            (f"prompts.variants.{k}" + (".template" if k in project.prompts.mapped else ""), v)
            for k, v in project.prompts.variants.items()
        ]
        refs += [
            (f"prompts.variants.{k}.mapper_prompt", m.mapper_prompt)
            for k, m in project.prompts.mapped.items()
        ]
        for where, rel in refs:
            if rel:
                problem = _template_problem(base, rel)
                if problem:
                    problems.append((where, problem))

    if problems:
        raise ProjectError(file, problems)
    return project


def load_project(path: str | Path) -> Project:
    """Load and validate a project definition file (or a folder holding one)."""
    file = find_definition(Path(path))
    data = read_raw(file)
    project = validate_data(data, str(file), base=file.parent)
    project._source = file.resolve()
    return project
