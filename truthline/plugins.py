"""How a package plugs into truthline: the extension points, and the one type a plug-in's
entry-point module needs.

Every extension point is a registry one decorator away (``truthline._registry.Registry``)
that also reads an entry-point group, so an installed package (a paper system under
``truthline.systems``, or a third-party one) adds names without truthline importing it: the
loop reads the names from the package metadata and imports the plug-in only when a project,
a spec or a command uses one.

=======================================  ===================================================
entry-point group                        what a name maps to
=======================================  ===================================================
``truthline.metrics``                    a module that registers the metric (``@metric``)
``truthline.run_manifest``               ``fn(project) -> dict``: facts a grounding run's
                                         manifest records (frozen rule versions)
``truthline.rules``                      a rule baseline ``fn(request, support)`` (``rule:``)
``truthline.backends``                   a model backend class, by spec kind
``truthline.scenes.environments``        a scene environment class (``@register_environment``)
``truthline.report_sections``            ``fn(ReportContext) -> list[Section]``
``truthline.metric_sections``            ``fn(result, run_id) -> list[Section]`` for a metric
``truthline.dashboard_sections``         ``fn(ctx, run_ids) -> list[truthline.report.Section]``
``truthline.cli``                        a :class:`CommandGroup` (``truthline NAME ...``)
``truthline.demos``                      ``fn(workspace, fresh, models, seed, as_json)``
                                         behind ``truthline demo --NAME``
``truthline.label_studio_kinds``         a Label Studio project kind (config, task, reader)
=======================================  ===================================================

README ("Add a system") walks through a toy system that uses three of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandGroup:
    """A ``truthline`` sub-command a plug-in adds: ``target`` (``"module:attr"``, a Typer app
    or command function) is imported only when the command runs; ``help`` is the one line
    ``truthline --help`` shows. Declare it in a module that imports nothing heavy."""

    target: str
    help: str
