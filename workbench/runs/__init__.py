"""Runs: the headless run service, run records, the sqlite3 history, reports and restore."""
