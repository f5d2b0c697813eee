"""The probe Lab page."""
