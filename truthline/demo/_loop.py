"""The whole loop, unattended, on embedded defaults — with SIMULATED data, models and people.

1. generate SteelBench-like CCTV videos with known truth (OpenCV-drawn, SIMULATED);
2. mine clips with a scripted detector, prefill with a SIMULATED VLM (plus any real model);
3. start Label Studio, push the blind and anchored arms;
4. SIMULATED annotators with planted behaviours annotate through the Label Studio API as
   their own users; a SIMULATED expert reviews a sample in the review project;
5. pull, audit (the planted rubber-stamper should be flagged), record the exclusion,
   finalize gold with provenance;
6. benchmark two SIMULATED models and a rule baseline on the gold, compare gold slices,
   write the reports and the release export;
7. print a summary.

Every step is resumable: rerunning skips what the store (or Label Studio) already holds.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import mark_simulated, tables
from truthline.workspace import Workspace

PREFILL_MODEL = "simulated:steel-v1"
RERUN_MODEL = "simulated:steel-v1;alias=simulated:steel-v1@rerun"
"""The prefill VLM asked again with another prompt variant: the predictions the provenance
gradient scores (scoring the prefill itself against VLM-sourced gold would be circular)."""
RERUN_ALIAS = "simulated:steel-v1@rerun"
BENCH_MODELS = ["simulated:steel-strong", "simulated:steel-weak", "rule:majority"]


@dataclass(frozen=True)
class DemoAnnotator:
    email: str
    behaviour: str
    share: float = 1.0
    blind: bool = True


TEAM = (
    DemoAnnotator("careful-1@annotators.local", "careful"),
    DemoAnnotator("careful-2@annotators.local", "careful"),
    DemoAnnotator("noisy@annotators.local", "noisy"),
    DemoAnnotator("overcorrector@annotators.local", "over_corrector"),
    DemoAnnotator("rubberstamp@annotators.local", "rubber_stamper", share=1.5, blind=False),
)
EXPERT = DemoAnnotator("expert@annotators.local", "expert")

SIZES: dict[str, dict[str, Any]] = {
    # cameras, scenes per camera, share of anchored items double-annotated, expert reviews
    # one camera = one video = one cluster of the bootstrap: the intervals resolve the
    # anchored-vs-blind effect only with enough cameras, so the small size has 12 short ones
    "small": dict(cameras=12, scenes=10, anchored_pairs=0.5, review=0.3),
    "full": dict(cameras=16, scenes=30, anchored_pairs=0.3, review=0.3),
}


@dataclass
class DemoResult:
    workspace: Path
    steps: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"workspace": str(self.workspace), **self.steps}


class Demo:
    """Runs the loop step by step; each step is idempotent."""

    def __init__(
        self,
        ws: Workspace,
        *,
        size: str = "small",
        seed: int = 0,
        models: list[str] | None = None,
        port: int = 8080,
        media_port: int = 8090,
        console: Console | None = None,
        quiet: bool = False,
    ):
        if size not in SIZES:
            raise TruthlineError(f"unknown demo size {size!r} (use small or full)")
        self.ws = ws
        self.size = size
        self.cfg = SIZES[size]
        self.seed = seed
        self.extra_models = list(models or [])
        self.port = port
        self.media_port = media_port
        self.console = console or Console()
        self.quiet = quiet
        self.result = DemoResult(ws.root)
        self.project: Project
        self._metas: dict[int, dict[str, Any]] = {}
        self._n = 0

    # -- helpers ------------------------------------------------------------------------
    def step(self, title: str) -> None:
        self._n += 1
        self.console.rule(f"[bold][{self._n}/7] {title}")

    @property
    def raw(self) -> Path:
        return self.ws.root / "raw" / "videos"

    def _progress(self) -> Progress:
        return Progress(disable=self.quiet, transient=True, console=self.console)

    # -- 1. data --------------------------------------------------------------------------
    def generate(self) -> None:
        from truthline.simulate._video import write_videos

        self.step("SIMULATED CCTV videos with known truth")
        self.project = self.ws.init_project("steel-safety")
        if (self.raw / "scenes.json").is_file():
            scenes = json.loads((self.raw / "scenes.json").read_text())
            self.console.print(f"reusing {len(scenes)} simulated scenes in {self.raw}")
        else:
            vs = write_videos(
                self.raw,
                cameras=self.cfg["cameras"],
                scenes_per_camera=self.cfg["scenes"],
                seed=self.seed,
            )
            self.console.print(
                f"wrote {self.cfg['cameras']} camera videos with {vs.n_scenes} scenes "
                f"(dust, glare, low light, steam) to {self.raw}"
            )
        self.result.steps["videos"] = {"folder": str(self.raw)}

    # -- 2. mining and prefill ------------------------------------------------------------
    def mine_and_prefill(self) -> None:
        from truthline.prefill import mine_videos, prefill
        from truthline.simulate._video import scene_for

        self.step("mine clips (scripted detector) and prefill (SIMULATED VLM)")
        rep = mine_videos(
            self.ws,
            self.project,
            self.raw,
            detector=f"scripted:{self.raw / 'detections.json'}",
            metadata=self.raw / "videos.csv",
            progress=not self.quiet,
        )
        self.console.print(
            f"mined {rep.candidates} candidate clips -> {rep.after_dedup} after dedup -> "
            f"{rep.items_added} new items ({rep.items_existing} already there)"
        )
        scenes = json.loads((self.raw / "scenes.json").read_text())
        store = self.ws.store
        attached = 0
        with store.begin() as conn:
            t = tables.items
            for row in conn.execute(select(t).where(t.c.project == self.project.name)).all():
                if row.sim_truth is not None:
                    continue
                meta = dict(row.meta)
                sc = scene_for(scenes, meta["video"], meta["clip_start_s"], meta["clip_end_s"])
                if sc is None:
                    continue
                meta.update(
                    visibility=sc["visibility"],
                    scene_type=sc["scene_type"],
                    site=sc["site"],
                    simulated=True,
                )
                conn.execute(
                    t.update().where(t.c.id == row.id).values(meta=meta, sim_truth=sc["truth"])
                )
                attached += 1
        if attached:
            self.console.print(f"attached SIMULATED truth and conditions to {attached} clips")
        reports = {}
        runs = [(PREFILL_MODEL, None), (RERUN_MODEL, "v3")] + [(m, None) for m in self.extra_models]
        for model, variant in runs:
            pr = prefill(store, self.project, model, variant=variant, progress=not self.quiet)
            reports[model] = pr.as_dict()
            self.console.print(f"prefill {model}: {_short(reports[model])}")
        self.result.steps["mining"] = {k: v for k, v in rep.as_dict().items() if k != "clips"}
        self.result.steps["prefill"] = reports

    # -- 3. Label Studio --------------------------------------------------------------------
    def label_studio(self) -> None:
        from truthline.annotate import add_users, push, serve, target
        from truthline.annotate._users import USERS_FILE

        self.step("Label Studio: serve, accounts, blind and anchored projects")
        info = serve(self.ws, port=self.port, media_port=self.media_port, progress=not self.quiet)
        self.console.print(
            f"Label Studio at {info['url']} (admin credentials in {info['credentials_file']})"
        )
        self.target = target(self.ws)
        self.users_file = self.ws.secrets_dir / USERS_FILE
        made = add_users(self.target.client, [a.email for a in (*TEAM, EXPERT)], self.users_file)
        new = sum(m["status"] == "created" for m in made)
        self.console.print(
            f"{len(made)} annotator accounts ({new} new; passwords in {self.users_file})"
        )
        pushed = {}
        for arm, kw in (
            ("blind", dict(split=0.5, seed=self.seed, overlap=2)),
            ("anchored", dict(overlap=2, model_version=self._prefill_version())),
        ):
            r = push(
                self.ws.store,
                self.project,
                self.target.client,
                arm,
                media_base=self.target.media_base or "",
                media_root=self.target.media_root or self.ws.media_dir,
                progress=not self.quiet,
                **kw,
            )
            pushed[arm] = r.as_dict()
            self.console.print(
                f"{arm}: {r.created} tasks created, {r.existing} already there -> {r.project_url}"
            )
        self.result.steps["label_studio"] = {"url": info["url"], "pushed": pushed}

    def _prefill_version(self) -> str:
        """The model version the anchored arm shows: the SIMULATED prefill VLM's alias."""
        from truthline.models import parse_model_spec

        return parse_model_spec(PREFILL_MODEL).alias

    # -- 4. SIMULATED annotators ------------------------------------------------------------
    def annotate(self) -> None:
        from truthline.annotate import pull, push, submit_annotation, user_client

        self.step("SIMULATED annotators label through Label Studio as their own users")
        store, client = self.ws.store, self.target.client
        pull(store, self.project, client, progress=False)  # resume: what is already there
        done = self._done()
        items = [i for i in store.items(self.project.name) if i["sim_truth"]]
        truth = {i["id"]: i["sim_truth"] for i in items}
        self._metas = {i["id"]: i["meta"] for i in items}  # person boxes the annotators draw
        preds = self._shown()
        tasks = self._tasks()
        clients = {
            a.email: user_client(self.target.client.url, a.email, self.users_file)
            for a in (*TEAM, EXPERT)
        }
        plan = self._plan(tasks, truth)
        posted = 0
        with self._progress() as bar:
            job = bar.add_task("annotating", total=len(plan))
            for item, ann, arm in plan:
                bar.advance(job)
                if (item, ann.email, arm) in done:
                    continue
                posted += self._label(
                    item, ann, arm, truth, preds, tasks, clients, submit_annotation
                )
        self.console.print(
            f"tier 1: {posted} annotations posted ({len(plan) - posted} already there)"
        )

        pull(store, self.project, client, progress=False)
        n_review = max(1, round(self.cfg["review"] * len(truth)))
        rr = push(
            store,
            self.project,
            client,
            "review",
            media_base=self.target.media_base or "",
            media_root=self.target.media_root or self.ws.media_dir,
            sample=n_review,
            strategy="random",
            seed=self.seed,
            progress=not self.quiet,
        )
        self.console.print(
            f"review: {rr.created} tasks for the SIMULATED expert -> {rr.project_url}"
        )
        tasks = self._tasks()
        done = self._done()
        reviewed = 0
        for item in sorted(i for (i, arm) in tasks if arm == "review"):
            if (item, EXPERT.email, "review") not in done and item in truth:
                reviewed += self._label(
                    item, EXPERT, "review", truth, preds, tasks, clients, submit_annotation
                )
        rep = pull(store, self.project, client, progress=not self.quiet)
        # they came through Label Studio like people: the store says they are SIMULATED
        mark_simulated(store, self.project.name, [a.email for a in (*TEAM, EXPERT)])
        self.console.print(
            f"tier 2: {reviewed} expert reviews posted; pulled {rep.annotations} annotations"
        )
        self.result.steps["annotations"] = {
            "tier1_posted": posted,
            "expert_posted": reviewed,
            "pull": rep.as_dict(),
        }

    def _done(self) -> set[tuple[int, str, str]]:
        a = tables.annotations
        with self.ws.store.begin() as conn:
            rows = conn.execute(
                select(a.c.item_id, a.c.annotator, a.c.arm)
                .where(a.c.project == self.project.name)
                .distinct()
            ).all()
        return {(r[0], r[1], r[2]) for r in rows}

    def _shown(self) -> dict[int, dict[str, Any]]:
        p = tables.predictions
        version = self._prefill_version()
        with self.ws.store.begin() as conn:
            rows = conn.execute(
                select(p.c.item_id, p.c["values"]).where(
                    p.c.project == self.project.name, p.c.model_version == version
                )
            ).all()
        return {r[0]: r[1] for r in rows}

    def _tasks(self) -> dict[tuple[int, str], dict[str, Any]]:
        t, lp = tables.ls_tasks, tables.ls_projects
        with self.ws.store.begin() as conn:
            rows = conn.execute(
                select(t.c.item_id, t.c.ls_task_id, t.c.ls_project_id, t.c.shown, lp.c.arm)
                .join(
                    lp,
                    (lp.c.ls_project_id == t.c.ls_project_id) & (lp.c.server_url == t.c.server_url),
                )
                .where(lp.c.project == self.project.name)
            ).all()
        return {
            (r.item_id, r.arm): {
                "task": r.ls_task_id,
                "ls_project": r.ls_project_id,
                "shown": r.shown,
            }
            for r in rows
        }

    def _plan(self, tasks: dict, truth: dict) -> list[tuple[int, DemoAnnotator, str]]:
        """Who labels what (seeded): two blind annotators per blind item; one or two per
        anchored item, weighted by share (the rubber-stamper takes more)."""
        rng = random.Random(self.seed)
        blind_team = [a for a in TEAM if a.blind]
        plan = []
        for item, arm in sorted(tasks):
            if item not in truth:
                continue
            if arm == "blind":
                plan += [(item, a, arm) for a in rng.sample(blind_team, 2)]
            elif arm == "anchored":
                first = rng.choices(TEAM, [a.share for a in TEAM])[0]
                plan.append((item, first, arm))
                if rng.random() < self.cfg["anchored_pairs"]:
                    rest = [a for a in TEAM if a is not first]
                    plan.append((item, rng.choices(rest, [a.share for a in rest])[0], arm))
        return plan

    def _label(self, item, ann, arm, truth, preds, tasks, clients, submit) -> int:
        from truthline.simulate import DIFFICULTY, decide_annotation

        task = tasks.get((item, arm))
        if task is None:
            return 0
        shown = preds.get(item) if arm == "anchored" else None
        if shown is not None:  # as the task showed it: with the detector boxes push placed
            from truthline.annotate import with_placed_boxes

            shown = with_placed_boxes(self.project, shown, task.get("shown"))
        rng = random.Random(f"{self.seed}:{item}:{ann.email}:{arm}")
        # field difficulty: hard fields (action, worker count) hide wrong prefills, so harmful
        # anchoring concentrates there (SteelBench's gradient), as in the store-only scenario
        dec = decide_annotation(
            ann.behaviour, self.project, truth[item], shown, rng, difficulty=DIFFICULTY
        )
        # a SIMULATED annotator draws each worker's box where the person is (the detector's
        # box, matched as push matches it): review tabs then show real boxes, no squares,
        # and an anchored annotator who keeps a placed box keeps exactly what was shown
        from truthline.annotate import place_entities

        values, _ = place_entities(self.project, dec.values, self._metas.get(item))
        parent = None
        if shown is not None:
            t = self.target.client.get(f"/api/tasks/{task['task']}")
            pr = t.get("predictions") or []
            parent = (pr[0]["id"] if isinstance(pr[0], dict) else pr[0]) if pr else None
        submit(
            clients[ann.email],
            self.project,
            task["task"],
            values,
            dec.lead_time,
            parent,
            shown=shown,
        )
        return 1

    # -- 5. audit and gold ------------------------------------------------------------------
    def audit(self) -> None:
        from truthline.audit import exclude_annotator, exclusions, finalize, run_audit, to_markdown

        self.step("provenance audit, exclusion, gold with provenance")
        store = self.ws.store
        res = run_audit(store, self.project, gradient_model=RERUN_ALIAS)
        flagged = sorted(a for a, s in res.signals.items() if s.flagged)
        already = {
            e["annotator"] for e in exclusions(store, self.project.name) if e.get("active", True)
        }
        for a in flagged:
            if a in already:
                continue
            fired = ", ".join(res.signals[a].fired)
            exclude_annotator(
                store,
                self.project,
                a,
                f"flagged by the provenance audit ({fired}); demo policy excludes flagged annotators",
                decided_by="truthline demo",
            )
        if set(flagged) - already:
            res = run_audit(store, self.project, gradient_model=RERUN_ALIAS)
        flagged = sorted(set(flagged) | already)  # a rerun: excluded annotators stay reported
        reports = self.ws.reports_dir
        reports.mkdir(parents=True, exist_ok=True)
        (reports / "audit.md").write_text(to_markdown(res.as_dict()), encoding="utf-8")
        gold = finalize(store, self.project)
        g = gold.as_dict()
        self.console.print(
            f"flagged: {', '.join(flagged) or 'nobody'}; audit report: {reports / 'audit.md'}"
        )
        self.console.print(
            f"gold snapshot {str(g.get('hash', ''))[:12]}: {_short(g.get('counts', g))}"
        )
        self.result.steps["audit"] = {
            "flagged": flagged,
            "planted_rubber_stamper": [a.email for a in TEAM if a.behaviour == "rubber_stamper"],
            "report": str(reports / "audit.md"),
            "gradient": res.gradient.to_dict(),
            "gold": {k: g.get(k) for k in ("hash", "counts", "provenance") if k in g},
        }

    # -- 6. benchmark -----------------------------------------------------------------------
    def benchmark(self) -> None:
        from truthline.benchmark import (
            RunConfig,
            compare_gold,
            compare_labels,
            export_release,
            leaderboard,
            run_benchmark,
            write_report,
        )

        self.step("benchmark two SIMULATED models and a rule baseline on the gold")
        store = self.ws.store
        manifest = run_benchmark(
            store,
            self.project,
            RunConfig(models=BENCH_MODELS, run_id="demo"),
            progress=not self.quiet,
        )
        run_id = manifest.get("run_id", "demo")
        cmp = compare_gold(store, self.project, run_id)
        by_labels = compare_labels(store, self.project, run_id)
        board = leaderboard(store, self.project, [run_id])
        reports = self.ws.reports_dir
        rep = write_report(store, self.project, [run_id], reports / "benchmark.md")
        export_dir = self.ws.root / "release"
        exp = export_release(store, self.project, export_dir, force=True)
        self.result.steps["benchmark"] = {
            "run": run_id,
            "leaderboard": [m.as_dict() for m in board],  # typed results: plain at the JSON edge
            "compare_gold": cmp.as_dict(),
            "compare_labels": by_labels.as_dict(),
            "report": str(reports / "benchmark.md"),
            "report_files": rep,
            "export": str(export_dir),
            "export_summary": exp,
        }

    # -- 7. summary -------------------------------------------------------------------------
    def summary(self) -> None:
        from rich.table import Table

        self.step("summary")
        s = self.result.steps
        a = s.get("audit", {})
        for line in gradient_lines(a.get("gradient")):  # the finding first, then who, then slices
            self.console.print(line)
        self.console.print(
            f"planted rubber-stamper: {', '.join(a.get('planted_rubber_stamper', []))}; "
            f"flagged by the audit: [bold]{', '.join(a.get('flagged', [])) or 'nobody'}[/]"
        )
        bench = s.get("benchmark", {})
        cmp = bench.get("compare_labels") or {}
        rows = cmp.get("models") if isinstance(cmp, dict) else None
        if rows:
            table = Table(
                title="The same answers scored against each arm's labels (SIMULATED; accuracy, "
                "95% CI)",
                title_justify="left",
            )
            # the model names never truncate (models must be told apart); the rest wraps
            width = max(len(str(m.get("model"))) for m in rows)
            table.add_column("model", no_wrap=True, min_width=width)
            for head in ("blind labels", "anchored labels", "VLM-sourced labels"):
                table.add_column(head)
            table.add_column("anchored − blind", justify="right")
            table.add_column("VLM-sourced − blind", justify="right")
            for m in rows:
                table.add_row(*_inflation_row(m))
            self.console.print(table)
            from truthline.stats import design_note, fmt_ci

            note = design_note(rows)
            if note:  # e.g. 12 videos in 3 sites: never shown as if over that many items
                self.console.print(f"[yellow]{note}[/]")
            vlms = [m for m in rows if not str(m["model"]).startswith("rule:")]  # as the mean
            up = [m for m in vlms if ((m.get("inflation_anchored_pp") or {}).get("point") or 0) > 0]
            mean = cmp.get("mean_inflation_anchored_ci")
            self.console.print(
                f"{len(up)} of {len(vlms)} SIMULATED VLMs score higher against anchored labels "
                "(annotators who saw the prefill) than against blind labels; mean inflation "
                f"{fmt_ci(mean, digits=1, sign=True, missing='-')} pp.\n"
                "The benchmark models share the prefill VLM's error tendencies (a declared "
                "SIMULATED model family), so labels that kept the prefill's mistakes count those "
                "mistakes as right (SteelBench: all 9 models higher, +6.6 pp).\n"
                "Scores on the finalized gold's provenance slices: "
                "`truthline benchmark compare-gold demo --reference gold`."
            )
        self.console.print(f"audit report:      {a.get('report')}")
        self.console.print(f"benchmark report:  {s.get('benchmark', {}).get('report')}")
        self.console.print(f"release export:    {s.get('benchmark', {}).get('export')}")
        self.console.print(
            f"Label Studio:      {s.get('label_studio', {}).get('url')}  (stop: truthline -w {self.ws.root} annotate stop)"
        )
        self.console.print(
            f"\nopen the dashboards:  [bold]truthline --workspace {self.ws.root} dashboard[/]"
        )

    def run(self) -> DemoResult:
        self.generate()
        self.mine_and_prefill()
        self.label_studio()
        self.annotate()
        self.audit()
        self.benchmark()
        self.summary()
        return self.result


def gradient_lines(g: Any) -> list[str]:
    """The audit's provenance gradient as the summary's opening lines: the prefill VLM's
    agreement with blind labels, anchored labels and VLM-sourced gold, each with its 95%
    interval, then the VLM-sourced minus blind inflation. It leads the summary because it is
    the tool's finding (the flagged annotator and the benchmark slices follow from it)."""
    if not isinstance(g, dict) or not any(g.get(k) for k in ("blind", "anchored", "vlm_sourced")):
        return []
    from rich.markup import escape

    from truthline.stats import fmt_ci

    def pct(x: Any) -> str:
        return fmt_ci(x, digits=1, scale=100.0, unit="%", missing="-")

    who = escape(str(g.get("predictions") or "the prefill VLM"))
    return [
        f"[bold]provenance gradient[/] of {who} (SIMULATED; agreement, 95% CI):",
        f"  blind labels        {pct(g.get('blind'))}",
        f"  anchored labels     {pct(g.get('anchored'))}",
        f"  VLM-sourced gold    {pct(g.get('vlm_sourced'))}",
        "  VLM-sourced − blind "
        f"{fmt_ci(g.get('inflation_pp'), digits=1, sign=True, unit=' pp', missing='-')}",
    ]


def _short(d: Any) -> str:
    if isinstance(d, dict):
        return ", ".join(f"{k} {v}" for k, v in d.items() if isinstance(v, int | float | str))[:160]
    return str(d)[:160]


def _inflation_row(m: dict[str, Any]) -> list[str]:
    from truthline.stats import fmt_ci

    # the design goes once under the table (design_note), not in every cell
    def pct(x: Any) -> str:
        return fmt_ci(x, digits=1, scale=100.0, unit="%", missing="-", design=False)

    def pp(x: Any) -> str:
        if not isinstance(x, dict):
            return "-"
        return fmt_ci(x, digits=1, sign=True, missing="-", design=False)

    return [
        str(m.get("model")),
        pct(m.get("blind")),
        pct(m.get("anchored")),
        pct(m.get("vlm-sourced")),
        pp(m.get("inflation_anchored_pp")),
        pp(m.get("inflation_vlm-sourced_pp")),
    ]


def fresh_workspace(root: Path) -> None:
    """Remove a demo workspace (after stopping its Label Studio), for ``--fresh``."""
    if not root.exists():
        return
    try:
        from truthline.annotate import stop

        stop(Workspace.from_env(root))
    except Exception:  # nothing running
        pass
    shutil.rmtree(root)
