"""Executor postures as typed data: what each one is, contains and warns about."""
