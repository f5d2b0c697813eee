"""The one exception tree of the workbench.

Core modules raise these with messages written for the person using the tool; the CLI prints
them to stderr and the GUI shows them. Nothing else should need to catch broad exceptions.
"""


class WorkbenchError(Exception):
    """Base of every error the workbench reports to a user."""


class UsageError(WorkbenchError):
    """The user asked for something that cannot work as asked (bad option, unknown name)."""


class SkillError(WorkbenchError):
    """A skill could not be found or read at all."""


class PostureError(WorkbenchError):
    """A posture is unknown, unavailable on this machine, or badly configured."""


class ExecutorError(WorkbenchError):
    """An executor could not start, run or stop a command (not the command's own failure)."""


class WorkspaceError(WorkbenchError):
    """A workspace could not be snapshotted, compared or restored."""


class HistoryError(WorkbenchError):
    """The run history could not be read or written."""


class EnvironmentBuildError(WorkbenchError):
    """A skill environment could not be built, found or removed (the message names the step)."""
