"""Skill environments: what a skill needs beyond the sandbox image (`needs`, with the name tables
of `names`), built once for the Python a posture runs (`targets`, `build`) into a content-addressed
`store`, the state of a skill's environment and the one a run uses (`resolve`), and the cause of a
run that failed for want of one (`diagnosis`).
"""
