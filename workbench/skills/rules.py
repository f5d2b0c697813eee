"""The Agent Skills spec's rules for front matter fields, and the spec's advice on body size.

Each check returns diagnostics written for the person fixing the skill. The name rules follow
the reference validator skills-ref exactly (NFKC-normalised, lowercase, Unicode letters allowed,
equal to the folder name); stricter portability rules of other tools (ASCII-only names, no angle
brackets in descriptions, from Anthropic's quick_validate.py) are advice, not spec violations;
so are control and bidi characters in a description (the spec does not forbid them, but they
act on terminals or reorder what is shown).
"""

import math
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from workbench.skills.diagnostics import Code, Diagnostic, diagnostic

ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
ADVISED_BODY_LINES = 500
ADVISED_BODY_TOKENS = 5000
CHARS_PER_TOKEN = 4
# Control characters but newline and tab, and the bidi controls that reorder shown text.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_front_matter(
    front_matter: Mapping[str, object], key_lines: Mapping[str, int], folder: Path, file: Path
) -> list[Diagnostic]:
    """Every spec problem of `front_matter`, pointing at the line of the key concerned."""

    def problem(code: Code, message: str, key: str) -> Diagnostic:
        return diagnostic(code, message, file, key_lines.get(key, 1))

    allowed = ", ".join(ALLOWED_KEYS)
    found = [
        problem(
            Code.UNKNOWN_KEY,
            f"'{key}' is not a SKILL.md field; the spec allows only {allowed} "
            "(put anything else under metadata).",
            key,
        )
        for key in front_matter
        if key not in ALLOWED_KEYS
    ]
    found += [
        problem(code, message, "name")
        for code, message in _name_problems(front_matter.get("name"), folder.name)
    ]
    found += [
        problem(code, message, "description")
        for code, message in _description_problems(front_matter.get("description"))
    ]
    compatibility = front_matter.get("compatibility")
    if compatibility is not None and not _is_text(compatibility, MAX_COMPATIBILITY_CHARS):
        limit = MAX_COMPATIBILITY_CHARS
        message = (
            f"compatibility must be text of at most {limit} characters{_length(compatibility)}."
        )
        found.append(problem(Code.COMPATIBILITY_INVALID, message, "compatibility"))
    metadata = front_matter.get("metadata")
    if metadata is not None and (why := _metadata_problem(metadata)):
        message = f"metadata must map keys to text values (key: value lines); {why}."
        found.append(problem(Code.METADATA_INVALID, message, "metadata"))
    tools = front_matter.get("allowed-tools")
    if tools is not None and not (
        isinstance(tools, str)
        or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        message = (
            "allowed-tools must be a space-separated string or a list of tool names; "
            f"it is {_kind(tools)}."
        )
        found.append(problem(Code.ALLOWED_TOOLS_INVALID, message, "allowed-tools"))
    return found


def check_body(body: str, file: Path, line: int) -> list[Diagnostic]:
    """The spec's advice: keep the body under about 500 lines and 5,000 tokens."""
    found = []
    if (lines := count_lines(body)) > ADVISED_BODY_LINES:
        message = (
            f"The body has {lines:,} lines; the spec advises under {ADVISED_BODY_LINES}. "
            "Move detail into references/ files the agent reads only when needed."
        )
        found.append(diagnostic(Code.BODY_TOO_LONG, message, file, line))
    if (tokens := estimate_tokens(body)) > ADVISED_BODY_TOKENS:
        message = (
            f"The body is about {tokens:,} tokens; the spec advises under {ADVISED_BODY_TOKENS:,}. "
            "An agent loads all of it when the skill activates."
        )
        found.append(diagnostic(Code.BODY_TOO_MANY_TOKENS, message, file, line))
    return found


def count_lines(text: str) -> int:
    """Lines in `text`, counting a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def estimate_tokens(text: str) -> int:
    """A rough token count: about four characters a token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def suggest_name(name: str) -> str:
    """A spec-valid name close to `name`: 'My_PDF Tool' becomes 'my-pdf-tool'."""
    dashed = "".join(c if c.isalnum() else "-" for c in name.lower())
    return re.sub(r"-+", "-", dashed).strip("-")[:MAX_NAME_CHARS].strip("-") or "my-skill"


def _name_problems(raw: object, folder_name: str) -> list[tuple[Code, str]]:
    if isinstance(raw, list | dict):
        message = (
            f"The name is {_kind(raw)}, not text; write it on one line, like "
            f"'name: {suggest_name(folder_name)}'."
        )
        return [(Code.NAME_NOT_TEXT, message)]
    if not isinstance(raw, str) or not raw.strip():
        suggestion = suggest_name(folder_name)
        message = (
            f"The skill has no name; add 'name: {suggestion}' "
            "(the folder name, which the workbench uses meanwhile)."
        )
        return [(Code.NAME_MISSING, message)]
    name = unicodedata.normalize("NFKC", raw.strip())
    like = f"like '{suggest_name(name)}'"
    found = []
    if len(name) > MAX_NAME_CHARS:
        message = f"The name is {len(name)} characters; the limit is {MAX_NAME_CHARS}."
        found.append((Code.NAME_TOO_LONG, message))
    if name != name.lower():
        message = (
            f"The name '{name}' has capital letters; "
            f"use lowercase letters, digits and hyphens, {like}."
        )
        found.append((Code.NAME_CASE, message))
    if name.startswith("-") or name.endswith("-") or "--" in name:
        message = f"The name '{name}' starts or ends with a hyphen or has two in a row; {like}."
        found.append((Code.NAME_HYPHENS, message))
    if bad := sorted({c for c in name if not (c.isalnum() or c == "-")}):
        shown = " ".join(repr(c) for c in bad)
        message = f"The name '{name}' contains {shown}; use letters, digits and hyphens, {like}."
        found.append((Code.NAME_CHARACTERS, message))
    elif not name.isascii():
        message = (
            f"The name '{name}' has non-ASCII letters. The spec allows them, "
            "but some tools accept only a-z, 0-9 and hyphens."
        )
        found.append((Code.NAME_NOT_ASCII, message))
    if unicodedata.normalize("NFKC", folder_name) != name:
        message = (
            f"The name '{name}' differs from the folder name '{folder_name}'; "
            "rename one so they match."
        )
        found.append((Code.NAME_MISMATCH, message))
    return found


def _description_problems(raw: object) -> list[tuple[Code, str]]:
    if isinstance(raw, list | dict):
        message = (
            f"The description is {_kind(raw)}, not text. Write it on one line, or as a folded "
            "block: 'description: >' with the text on indented lines below."
        )
        return [(Code.DESCRIPTION_NOT_TEXT, message)]
    if not isinstance(raw, str) or not raw.strip():
        message = (
            "The skill has no description. Agents pick a skill by its description: "
            "say what it does and when to use it."
        )
        return [(Code.DESCRIPTION_MISSING, message)]
    found = []
    if len(raw) > MAX_DESCRIPTION_CHARS:
        message = (
            f"The description is {len(raw):,} characters; the limit is {MAX_DESCRIPTION_CHARS:,}."
        )
        found.append((Code.DESCRIPTION_TOO_LONG, message))
    if "<" in raw or ">" in raw:
        message = (
            "The description contains < or >. The spec allows them, but Anthropic's "
            "skill-creator validator rejects them (they can read as markup)."
        )
        found.append((Code.DESCRIPTION_ANGLE_BRACKETS, message))
    hidden = sorted({f"U+{ord(c):04X}" for c in _HIDDEN.findall(raw)})
    if hidden:
        message = (
            f"The description contains control or bidi characters ({', '.join(hidden)}). "
            "They are invisible, can drive a terminal or reorder the text around them; "
            "the workbench shows them escaped. Remove them."
        )
        found.append((Code.DESCRIPTION_CONTROL_CHARACTERS, message))
    return found


def _is_text(value: object, limit: int) -> bool:
    return isinstance(value, str) and len(value) <= limit


def _length(value: object) -> str:
    return f" (it has {len(value):,})" if isinstance(value, str) else f" (it is {_kind(value)})"


def _metadata_problem(metadata: object) -> str:
    """Why `metadata` is not a mapping of keys to text ("" when it is)."""
    if not isinstance(metadata, dict):
        return f"it is {_kind(metadata)}"
    nested = [f"'{key}' holds {_kind(v)}" for key, v in metadata.items() if not isinstance(v, str)]
    return ", ".join(nested)


def _kind(value: object) -> str:
    """What a YAML value is, in words: `text`, `a list of 2 items`, `a mapping of 1 key`."""
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' * (len(value) != 1)}"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key{'s' * (len(value) != 1)}"
    return "text"
