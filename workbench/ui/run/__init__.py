"""The Run page's parts: the command, its settings, live output, charts, processes, outcome,
changes and diffs."""
