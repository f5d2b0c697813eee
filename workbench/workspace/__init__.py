"""The run's workspace: snapshots before and after a run (`snapshot`, kept with their file contents
in `blobs` and saved by `manifest`), the `FileChange`s between them (`diff`, `changes`), restoring
one (`restore`), and the tamper-proof folder walk they share (`safe_walk`).
"""
