"""The QuickJS worker process: its entry points (`main` cold, `serve` warm), host API and
control-pipe framing; imports only the stdlib, and this file stays empty of imports so the worker
does not pull in `workbench.executors`.
"""
