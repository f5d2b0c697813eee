"""The QuickJS worker process: its entry point, host API and control-pipe framing.

Kept apart from `workbench.executors`, whose package import pulls in the executor registry, asyncio
and psutil: the worker starts once per run as `python -I -m
workbench.executors.quickjs.worker.main` (or ahead of its run as
`workbench.executors.quickjs.worker.serve`) and imports only the stdlib pieces it needs. This file
stays empty of imports for that reason.
"""
