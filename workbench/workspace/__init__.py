"""The run's workspace: snapshots before and after, the diff between them, and restore."""
