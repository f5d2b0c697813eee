"""The `quickjs` posture: a JavaScript file run by QuickJS in a separate, limited worker.
`executor.QuickJsExecutor` runs it, `run` owns one worker run's limits and control channel, and
`worker` is the worker process itself.
"""
