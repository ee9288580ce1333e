"""RealityBench's scene environments (host-importable without bpy; the Blender worker imports
a module by name from the render job). Each is declared in the entry-point group
``truthline.scenes.environments``."""
