"""The `bubblewrap` posture: each command in its own namespaces (bwrap), limits it cannot
raise."""
