"""Skill environments: what a skill needs beyond the sandbox image (`needs`, with the name tables
of `names`), built once for the Python a posture runs (`targets`, `build`) into a content-
addressed `store`, and the state of a skill's environment and the one a run uses (`resolve`). A
run that failed for want of one is diagnosed by `workbench.runs.diagnosis`, with `names`'
tables.
"""
