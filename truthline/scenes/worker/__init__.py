"""The Blender side of the scene library: runs only inside the scenes venv.

``python -m truthline.scenes.worker FD`` reads one JSON job per line on stdin and writes one
JSON result per line to file descriptor ``FD`` (not stdout: Blender prints render progress
and driver noise there). ``_ctx`` holds the bpy helpers environments build with. Nothing in
this package is imported by the host.
"""
