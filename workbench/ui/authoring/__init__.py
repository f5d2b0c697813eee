"""Authoring in the window: the SKILL.md editor and the New Skill dialog."""
