"""Warm starts: the pools that keep sandboxes started ahead of their runs. `starts` holds the
`WarmPool` protocol and `WarmStarts`, the executor factory that uses the pools; `containers` (with
`container_claims` and `container_checks`) is the docker and gvisor pool, `quickjs` the pool of
QuickJS workers.
"""
