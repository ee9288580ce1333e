"""SynDORBench's scene environment ``dori`` (declared in ``truthline.scenes.environments``)."""
