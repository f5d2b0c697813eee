"""`workbench bench`: what each posture costs, measured against the floor on this machine.

Every row times one thing the workbench does (through the real executors, snapshot and
sampler) against the lowest-level way of doing the same thing (its floor), interleaved in one
process so that a noisy machine hits both alike. `stats` holds the interleaving and the
statistics, `rows` the row model and goals, the `*_rows` modules the measurements, `suite`
the catalogue, selection and skipping, and `report` the text table and the JSON payload.
"""
