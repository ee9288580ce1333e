"""SynDORBench (seeds/003): a person at DORI distances seen by a fixed CCTV camera, day /
night / night-vision variants through the ISP, discernibility labels (a Cochran-sized human
sample, RF/XGBoost propagation) and the paper's tables.

Plugs into the loop through entry points (pyproject.toml): the ``dori`` scene environment,
the ``simulated-dori`` model backend (SIMULATED viewers), report and dashboard sections, the
``truthline syndor`` CLI and ``truthline demo --scenes``. Modules: ``_syndor`` (the pipeline),
``_discern`` / ``_features`` (discernibility), ``_sim`` (SIMULATED people and models),
``_tables`` (the paper's tables), ``_demo``, ``envs``.
"""
