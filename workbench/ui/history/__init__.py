"""The History page."""
