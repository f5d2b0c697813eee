"""The skill catalog: manifest parsing, validation diagnostics, file trees and discovery.

`load_skill` reads one skill folder leniently, like a real client, and never raises for bad
content; `discover` finds the skills under a list of roots; `default_roots` names those roots.
Hostile skills (YAML bombs, FIFOs, huge or linked SKILL.md files, link loops, giant folders)
give bounded, clear diagnostics instead of hanging or crashing the catalog.
"""

from workbench.skills.catalog import (
    default_roots,
    discover,
    find_skill,
    load_skill,
    skill_with_text,
)
from workbench.skills.diagnostics import Code, Diagnostic, DiagnosticSeverity
from workbench.skills.files import FileKind, FileNode
from workbench.skills.model import Skill

__all__ = [
    "Code",
    "Diagnostic",
    "DiagnosticSeverity",
    "FileKind",
    "FileNode",
    "Skill",
    "default_roots",
    "discover",
    "find_skill",
    "load_skill",
    "skill_with_text",
]
