"""Runs: the headless run engine the CLI and the app share. `services.RunServices` builds the data
layout (`layout`), the sqlite3 history (`history`) and the `service.RunService` that runs one
command from start to record (`record`); `compare` runs one command under several postures,
`reports` exports a record, and `undo` restores a run's workspace.
"""
