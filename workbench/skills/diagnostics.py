"""Diagnostics: every problem the catalog reports about a skill, with a stable code.

Each `Code` has one fixed policy. A problem that breaks the Agent Skills spec is an *error*
(`skills validate` calls the skill invalid, as the reference validator `skills-ref` does);
everything else is a *warning*: advice on portability, size and hygiene, never a verdict.
Some errors also leave the skill *unusable* (`UNUSABLE`: its SKILL.md cannot be read, or it
has no description, so no client would load it); the others (a name that does not match its
folder, say) still let the workbench run it.
"""

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class DiagnosticSeverity(StrEnum):
    """`error`: the skill breaks the spec. `warning`: advice; the skill conforms all the same."""

    ERROR = "error"
    WARNING = "warning"


class Code(StrEnum):
    """Stable identifiers of the problems the catalog finds (scripts and tests match on them)."""

    # Errors that leave the skill unusable: it cannot be read or parsed, or says nothing.
    NOT_A_FOLDER = "not-a-folder"
    MISSING_SKILL_MD = "missing-skill-md"
    NOT_A_REGULAR_FILE = "not-a-regular-file"
    SKILL_MD_LINK = "skill-md-link"
    UNREADABLE = "unreadable"
    NO_FRONT_MATTER = "no-front-matter"
    UNCLOSED_FRONT_MATTER = "unclosed-front-matter"
    FRONT_MATTER_TOO_LARGE = "front-matter-too-large"
    YAML_SYNTAX = "yaml-syntax"
    YAML_TAG = "yaml-tag"
    YAML_TOO_COMPLEX = "yaml-too-complex"
    DUPLICATE_KEY = "duplicate-key"
    NOT_A_MAPPING = "front-matter-not-a-mapping"
    DESCRIPTION_MISSING = "description-missing"
    DESCRIPTION_NOT_TEXT = "description-not-text"
    # Errors: against the spec, but the workbench can still run the skill.
    INVALID_UTF8 = "invalid-utf8"
    NAME_MISSING = "name-missing"
    NAME_NOT_TEXT = "name-not-text"
    NAME_TOO_LONG = "name-too-long"
    NAME_CASE = "name-case"
    NAME_CHARACTERS = "name-characters"
    NAME_HYPHENS = "name-hyphens"
    NAME_MISMATCH = "name-mismatch"
    UNKNOWN_KEY = "unknown-key"
    DESCRIPTION_TOO_LONG = "description-too-long"
    COMPATIBILITY_INVALID = "compatibility-invalid"
    METADATA_INVALID = "metadata-invalid"
    ALLOWED_TOOLS_INVALID = "allowed-tools-invalid"
    # Warnings: advice and portability, within the spec.
    LOWERCASE_FILENAME = "skill-md-lowercase"
    SKILL_MD_TOO_LARGE = "skill-md-too-large"
    YAML_FLOW_STYLE = "yaml-flow-style"
    YAML_ALIAS = "yaml-alias"
    NAME_NOT_ASCII = "name-not-ascii"
    DESCRIPTION_ANGLE_BRACKETS = "description-angle-brackets"
    DESCRIPTION_CONTROL_CHARACTERS = "description-control-characters"
    BODY_TOO_LONG = "body-too-long"
    BODY_TOO_MANY_TOKENS = "body-too-many-tokens"
    FILE_TREE_TRUNCATED = "file-tree-truncated"
    SYMLINK_OUTSIDE = "symlink-outside"
    SYMLINK_LOOP = "symlink-loop"


# The problems that leave no front matter to read (its fields are then unknown).
UNREADABLE_FRONT_MATTER = frozenset(
    {
        Code.NO_FRONT_MATTER,
        Code.UNCLOSED_FRONT_MATTER,
        Code.FRONT_MATTER_TOO_LARGE,
        Code.YAML_SYNTAX,
        Code.YAML_TAG,
        Code.YAML_TOO_COMPLEX,
        Code.NOT_A_MAPPING,
    }
)
UNUSABLE = UNREADABLE_FRONT_MATTER | {
    Code.NOT_A_FOLDER,
    Code.MISSING_SKILL_MD,
    Code.NOT_A_REGULAR_FILE,
    Code.SKILL_MD_LINK,
    Code.UNREADABLE,
    Code.DUPLICATE_KEY,
    Code.DESCRIPTION_MISSING,
    Code.DESCRIPTION_NOT_TEXT,
}
_ERRORS = UNUSABLE | {
    Code.INVALID_UTF8,
    Code.NAME_MISSING,
    Code.NAME_NOT_TEXT,
    Code.NAME_TOO_LONG,
    Code.NAME_CASE,
    Code.NAME_CHARACTERS,
    Code.NAME_HYPHENS,
    Code.NAME_MISMATCH,
    Code.UNKNOWN_KEY,
    Code.DESCRIPTION_TOO_LONG,
    Code.COMPATIBILITY_INVALID,
    Code.METADATA_INVALID,
    Code.ALLOWED_TOOLS_INVALID,
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a skill: where it is (1-based line, when known) and what to do about it."""

    severity: DiagnosticSeverity
    code: Code
    message: str
    file: Path
    line: int | None = None

    @property
    def is_error(self) -> bool:
        """True when the problem breaks the spec (the skill is then invalid)."""
        return self.severity is DiagnosticSeverity.ERROR

    def __str__(self) -> str:
        """`path:line: severity: message`, the form compilers and editors understand."""
        where = f"{self.file}:{self.line}" if self.line is not None else str(self.file)
        return f"{where}: {self.severity}: {self.message}"


def diagnostic(code: Code, message: str, file: Path, line: int | None = None) -> Diagnostic:
    """A diagnostic with the severity that `code` always has."""
    severity = DiagnosticSeverity.ERROR if code in _ERRORS else DiagnosticSeverity.WARNING
    return Diagnostic(severity, code, message, file, line)
