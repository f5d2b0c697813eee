"""`Skill`: everything the catalog knows about one skill folder, as frozen data."""

from dataclasses import dataclass
from pathlib import Path

from workbench.skills.diagnostics import UNUSABLE, Diagnostic
from workbench.skills.files import FileNode
from workbench.skills.rules import count_lines, estimate_tokens

COMMAND_KEY = "command"  # metadata key holding the command a skill suggests running


@dataclass(frozen=True, slots=True)
class Skill:
    """A loaded skill folder.

    `name` is the front matter's name, or the folder's name when that is missing. `skill_md` is
    the manifest file (even when it could not be read); `body_start_line` is the 1-based line of
    SKILL.md where the Markdown body begins. A skill is `valid` when it has no errors (what
    `workbench skills validate` checks), and `usable` unless an error keeps it from loading.
    """

    name: str
    path: Path
    skill_md: Path
    description: str
    front_matter: dict[str, object]
    body: str
    body_start_line: int
    diagnostics: tuple[Diagnostic, ...]
    files: FileNode

    @property
    def usable(self) -> bool:
        """True unless a problem keeps any client from loading the skill."""
        return not any(d.code in UNUSABLE for d in self.diagnostics)

    @property
    def valid(self) -> bool:
        """True when the skill conforms to the Agent Skills spec: it has no errors."""
        return not any(d.is_error for d in self.diagnostics)

    @property
    def body_lines(self) -> int:
        """Lines in the Markdown body."""
        return count_lines(self.body)

    @property
    def body_tokens(self) -> int:
        """Estimated tokens in the Markdown body (about four characters a token)."""
        return estimate_tokens(self.body)

    @property
    def command(self) -> str | None:
        """The shell command line the skill suggests (`metadata.command`), if it has one.

        Run it with `sh -c` in the workspace, with SKILL_DIR and WORKSPACE set; for a QuickJS
        skill it is a .js path followed by its arguments.
        """
        metadata = self.front_matter.get("metadata")
        command = metadata.get(COMMAND_KEY) if isinstance(metadata, dict) else None
        return command.strip() if isinstance(command, str) and command.strip() else None
