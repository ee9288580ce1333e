"""RealityBench (seeds/000): proof-of-work frames rendered from scene environments (tape gap,
slope gauge, plate, label board, vehicle face, damage view), the acceptability scorer
validated against raters, and conditional scoring of documentation questions.

Plugs into the loop through entry points (pyproject.toml): its scene environments, the
``conditional`` / ``acceptability_documentation_rank`` / ``rendering_transfer`` metrics,
report and dashboard sections, and the ``truthline pow`` CLI. The modules are imported only
when one of those names is used: ``_pow`` (frames -> rating project -> validation -> items),
``_conditional`` (scoring and tables), ``envs`` (the environments).
"""
