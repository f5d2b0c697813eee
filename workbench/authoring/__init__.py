"""Authoring skills: new skills from a template, `.skill` packages, the capability preview."""
