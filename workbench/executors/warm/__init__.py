"""Warm starts: the pools that keep containers and QuickJS workers started ahead of their runs."""
