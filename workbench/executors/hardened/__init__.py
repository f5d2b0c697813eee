"""The `hardened` posture: a local process with rlimits, a scrubbed environment and, as root, a
throwaway uid."""
