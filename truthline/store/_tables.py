"""Table definitions (SQLAlchemy Core). One metadata; the migrations in ``_migrations`` create it.

Long-format annotations: one row per (annotation, top-level field). Values are JSON in
the field type's normalized form. Every row that cost money (a model response) or human
time (an annotation) is written as soon as it exists.
"""

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()


def _ts(name: str, nullable: bool = True) -> Column:
    return Column(name, DateTime(timezone=True), nullable=nullable)


schema_version = Table(
    "truthline_schema",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("description", String(200), nullable=False),
    _ts("applied_at", nullable=False),
)

projects = Table(
    "projects",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("title", String(300), nullable=False, default=""),
    Column("definition", JSON, nullable=False),
    Column("definition_hash", String(64), nullable=False),
    Column("source_path", Text, nullable=False, default=""),
    _ts("created_at", nullable=False),
    _ts("updated_at", nullable=False),
    # migration 4: set for a namespace of Label Studio units that no project definition
    # describes (a system's own projects, e.g. PhysAlign's passes of one work folder:
    # "physalign.passes"); NULL for a project. Project lists leave such scopes out.
    Column("scope", String(100)),
)

items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), ForeignKey("projects.name"), nullable=False),
    Column("key", String(500), nullable=False),
    Column("media_kind", String(20), nullable=False),
    Column("media", JSON, nullable=False),  # list of paths relative to media_root
    Column("media_root", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("meta", JSON, nullable=False, default=dict),  # metadata CSV columns (strata)
    Column("parent", String(500)),  # cluster id (video, problem) for cluster bootstrap
    Column("sim_truth", JSON),  # known truth for SIMULATED models/annotators only
    _ts("created_at", nullable=False),
    _ts("updated_at", nullable=False),
    UniqueConstraint("project", "key", name="uq_items_project_key"),
    Index("ix_items_project_hash", "project", "content_hash"),
)

skipped_media = Table(
    "skipped_media",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("path", Text, nullable=False),
    Column("reason", Text, nullable=False),
    _ts("created_at", nullable=False),
    UniqueConstraint("project", "path", name="uq_skipped_project_path"),
)

# Every model call, prefill or benchmark: the one cache of the one model layer.
responses = Table(
    "responses",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cache_key", String(64), nullable=False, unique=True),
    Column("project", String(100)),
    Column("item_id", Integer, ForeignKey("items.id")),
    Column("purpose", String(20), nullable=False),  # prefill | benchmark | check
    Column("model_spec", Text, nullable=False),
    Column("model_alias", String(200), nullable=False),
    Column("simulated", Boolean, nullable=False, default=False),
    Column("status", String(20), nullable=False),  # parsed | model_failure | infra_missing
    Column("reason", Text),  # failure reason (unparseable, refused, truncated, http_500, ...)
    Column("raw_response", Text),
    Column("parsed", JSON),
    Column("field_errors", JSON),
    Column("tokens_in", Integer, default=0),
    Column("tokens_out", Integer, default=0),
    Column("tokens_thinking", Integer, default=0),
    Column("cost_usd", Float, default=0.0),
    Column("latency_s", Float),
    Column("attempts", Integer, default=1),
    Column("settings", JSON),
    Column("prompt_hash", String(64)),
    Column("image_hashes", JSON),
    _ts("created_at", nullable=False),
    _ts("updated_at", nullable=False),
    # the rendered prompt as sent, {"system": ..., "user": ...} (migration 3; NULL for
    # answers stored before it): per-sample logs show what the model was asked
    Column("prompt", JSON),
    Index("ix_responses_project_item", "project", "item_id"),
)

# Prefill predictions: the value ``v(i, f)`` an anchored annotator may be shown.
predictions = Table(
    "predictions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("model_version", String(200), nullable=False),
    Column("response_id", Integer, ForeignKey("responses.id")),
    Column("values", JSON, nullable=False),  # {field path: normalized value}
    Column("status", String(20), nullable=False),
    Column("simulated", Boolean, nullable=False, default=False),
    _ts("created_at", nullable=False),
    UniqueConstraint("project", "item_id", "model_version", name="uq_predictions_item_model"),
)

annotations = Table(
    "annotations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("field_path", String(300), nullable=False),
    Column("annotator", String(300), nullable=False),
    Column("arm", String(20), nullable=False),  # blind | anchored | review | import
    Column("tier", Integer, nullable=False, default=1),  # 1 annotator, 2 expert
    Column("value", JSON),
    Column("skipped", Boolean, nullable=False, default=False),
    Column("flagged", Boolean, nullable=False, default=False),  # annotator flagged the item
    Column("lead_time", Float),
    Column("source", String(30), nullable=False),  # label_studio | import | simulated
    # a SIMULATED annotator made it (issue 26): the demo's people label through Label
    # Studio, so their source is label_studio like a real person's; this says they are not
    Column("simulated", Boolean, nullable=False, default=False),
    Column("source_id", String(200), nullable=False),  # e.g. ls:<ls project>:<annotation id>
    Column("ls_project_id", Integer),
    Column("ls_task_id", Integer),
    Column("ls_annotation_id", Integer),
    Column("shown_prediction_id", Integer, ForeignKey("predictions.id")),
    Column("model_version", String(200)),
    Column(
        "origin", String(30)
    ),  # Label Studio result origin: prediction | prediction-changed | manual
    # anchored/review: the value agrees (field type's agree) with the prediction shown
    Column("kept", Boolean),
    Column("ground_truth", Boolean, nullable=False, default=False),
    Column("parent_prediction", Integer),
    Column("revision", Integer, nullable=False, default=1),
    _ts("annotated_at"),
    _ts("source_updated_at"),
    _ts("stored_at", nullable=False),
    # set when the annotation was deleted at its source (Label Studio): kept for history,
    # excluded from every statistic and from gold
    _ts("deleted_at"),
    UniqueConstraint("source_id", "field_path", name="uq_annotations_source_field"),
    Index("ix_annotations_project_item", "project", "item_id"),
)

annotation_history = Table(
    "annotation_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("annotation_id", Integer, ForeignKey("annotations.id"), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("value", JSON),
    Column("skipped", Boolean, nullable=False, default=False),
    _ts("source_updated_at"),
    _ts("replaced_at", nullable=False),
)

# What each annotator could see for each item: the prediction shown, or nothing (blind).
exposures = Table(
    "exposures",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("annotator", String(300), nullable=False),
    Column("arm", String(20), nullable=False),
    Column("prediction_id", Integer, ForeignKey("predictions.id")),
    Column("model_version", String(200)),
    Column("prompt_hash", String(64)),
    Column("ls_project_id", Integer),
    _ts("created_at", nullable=False),
    # migration 4: what else the task showed besides its data and any prediction, e.g. an
    # earlier annotation ({"kind": "annotation", "source_id": ..., "annotator": ...}) or a
    # private value ({"kind": "target"}); NULL or [] when nothing else was shown
    Column("shown", JSON),
    UniqueConstraint("project", "item_id", "annotator", "arm", name="uq_exposures"),
)

# migration 7: what pull found on a blind task that its annotators must not have had (a
# prediction on the task, an annotation made from one, an annotator who saw this item's
# prediction elsewhere); ``source_id`` names the affected annotation (NULL: the whole task)
exposure_violations = Table(
    "exposure_violations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("server_url", Text, nullable=False),
    Column("ls_project_id", Integer, nullable=False),
    Column("ls_task_id", Integer, nullable=False),
    Column("kind", String(40), nullable=False),
    Column("source_id", String(200), nullable=False, default=""),
    Column("annotator", String(300), nullable=False, default=""),
    Column("detail", Text, nullable=False, default=""),
    _ts("found_at", nullable=False),
    UniqueConstraint(
        "server_url", "ls_project_id", "ls_task_id", "kind", "source_id", name="uq_exposure_viol"
    ),
)

# migration 7: items with known answers mixed into tier-1 queues (``[audit]
# gold_standard_rate``) to score each annotator; annotators are not told which they are
gold_standard = Table(
    "gold_standard",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("field_path", String(300), nullable=False),
    Column("value", JSON),
    Column("source", String(40), nullable=False),  # expert | table
    _ts("created_at", nullable=False),
    UniqueConstraint("project", "item_id", "field_path", name="uq_gold_standard"),
)

# migration 7: the neutral name ("annotator A") a review task shows for a tier-1 annotator;
# the adjudicator sees only the pseudonym, the mapping stays here
annotator_pseudonyms = Table(
    "annotator_pseudonyms",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("annotator", String(300), primary_key=True),
    Column("pseudonym", String(100), nullable=False),
    _ts("created_at", nullable=False),
    UniqueConstraint("project", "pseudonym", name="uq_pseudonym"),
)

arm_assignments = Table(
    "arm_assignments",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("item_id", Integer, ForeignKey("items.id"), primary_key=True),
    Column("arm", String(20), nullable=False),
    Column("seed", Integer, nullable=False),
    Column("weight", Float, nullable=False, default=1.0),  # inverse sampling probability
    _ts("created_at", nullable=False),
)

ls_projects = Table(
    "ls_projects",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("arm", String(20), nullable=False),
    Column("cohort", String(200), nullable=False, default=""),
    Column("server_url", Text, nullable=False),
    Column("ls_project_id", Integer, nullable=False),
    Column("title", String(300), nullable=False),
    Column("label_config_hash", String(64)),
    _ts("created_at", nullable=False),
    # migration 4: the Label Studio project kind (truthline.annotate.KINDS) that built its
    # tasks and reads its annotations back; NULL: the loop's own "field-schema" kind
    Column("kind", String(100)),
    UniqueConstraint("project", "arm", "cohort", "server_url", name="uq_ls_projects"),
)

ls_tasks = Table(
    "ls_tasks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("ls_project_id", Integer, nullable=False),
    Column("server_url", Text, nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("ls_task_id", Integer, nullable=False),
    Column("prediction_id", Integer, ForeignKey("predictions.id")),
    Column("sample_weight", Float),
    _ts("created_at", nullable=False),
    # migration 4: what the task shows besides its data and prediction (copied into the
    # exposure of everyone who annotates it; see exposures.shown)
    Column("shown", JSON),
    UniqueConstraint("server_url", "ls_project_id", "item_id", name="uq_ls_tasks"),
)

exclusions = Table(
    "exclusions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("annotator", String(300), nullable=False),
    Column("reason", Text, nullable=False),
    Column("decided_by", String(300), nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    _ts("decided_at", nullable=False),
)

# migration 5: items withdrawn from a project's benchmark, with the recorded reason (a render
# that failed its sanity checks, a texture defect found later): gold loading leaves them out,
# reports count them by reason. ``active`` false: the withdrawal was undone (kept as history).
withdrawals = Table(
    "withdrawals",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("reason", Text, nullable=False),
    Column("decided_by", String(300), nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    _ts("decided_at", nullable=False),
)

# Work the audit hands back to people: adjudication of disagreements, re-queued items of
# excluded annotators, and risk-ordered expert-review samples (with inverse-probability weights).
audit_queue = Table(
    "audit_queue",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("kind", String(20), nullable=False),  # adjudication | requeue | expert_review
    Column("field_path", String(300), nullable=False, default=""),
    Column("reason", Text, nullable=False, default=""),
    Column("priority", Float, nullable=False, default=0.0),
    Column("probability", Float),  # inclusion probability (expert_review samples)
    Column("weight", Float),  # 1 / probability
    Column("selected", Boolean, nullable=False, default=True),
    Column("snapshot", String(64)),  # gold snapshot that raised it (finalize)
    Column("status", String(20), nullable=False, default="open"),  # open | pushed | done
    _ts("created_at", nullable=False),
    UniqueConstraint("project", "item_id", "kind", "field_path", name="uq_audit_queue"),
)

gold_snapshots = Table(
    "gold_snapshots",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("project", String(100), nullable=False),
    Column("policy", JSON, nullable=False),
    Column("counts", JSON, nullable=False),
    _ts("created_at", nullable=False),
)

gold = Table(
    "gold",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("snapshot", String(64), ForeignKey("gold_snapshots.hash"), nullable=False),
    Column("project", String(100), nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("field_path", String(300), nullable=False),
    Column("value", JSON),
    Column("provenance", String(40), nullable=False),
    # expert | blind_consensus | anchored_kept (VLM-sourced) | anchored_corrected | adjudicated
    Column("sources", JSON, nullable=False, default=list),
    UniqueConstraint("snapshot", "item_id", "field_path", name="uq_gold"),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("project", String(100), nullable=False),
    Column("manifest", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    _ts("created_at", nullable=False),
    _ts("updated_at", nullable=False),
)

run_results = Table(
    "run_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(200), ForeignKey("runs.id"), nullable=False),
    Column("model", Text, nullable=False),
    Column("item_id", Integer, ForeignKey("items.id"), nullable=False),
    Column("variant", String(100), nullable=False, default=""),
    Column("condition", String(20), nullable=False, default="base"),
    Column("control", String(20), nullable=False, default=""),
    Column("response_id", Integer, ForeignKey("responses.id")),
    Column("status", String(20), nullable=False),
    Column("scores", JSON),
    UniqueConstraint(
        "run_id", "model", "item_id", "variant", "condition", "control", name="uq_run_results"
    ),
)

# migration 8: a lease on each request a run is about to send (its cache key), so two runs
# on one store never pay for the same answer: a second run skips or waits for work another
# live run holds. ``expires_at`` frees the claims of a killed run (renewed while it runs).
request_claims = Table(
    "request_claims",
    metadata,
    Column("cache_key", String(64), primary_key=True),
    Column("run_id", String(64), nullable=False),
    Column("label", String(300), nullable=False, default=""),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    _ts("claimed_at", nullable=False),
    _ts("expires_at", nullable=False),
    Index("ix_request_claims_run", "run_id"),
)


# SIMULATED accounts declared before their annotations exist (migration 10): whoever plants
# simulated annotators in Label Studio (PhysAlign's simulate commands) names them here, and
# every pull marks their annotations as it stores them (``annotations.simulated``).
simulated_accounts = Table(
    "simulated_accounts",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("annotator", String(300), primary_key=True),
    _ts("created_at", nullable=False),
)

# migration 9: the start of each unfinished ``--fresh`` prefill (issue 28), so a rerun of the
# same fresh run after a crash or a stop resumes it (answers stored since are its own, not
# asked twice) instead of starting over; ``finished_at`` is set when it answered everything.
fresh_runs = Table(
    "fresh_runs",
    metadata,
    Column("scope", String(64), primary_key=True),
    Column("label", String(300), nullable=False, default=""),
    _ts("started_at", nullable=False),
    _ts("finished_at"),
)
