"""A failed run's stderr that shows a missing dependency gets a cause naming it."""

from workbench.environments.diagnosis import missing_dependency

TRACEBACK = """Traceback (most recent call last):
  File "/mnt/skills/x/scripts/check.py", line 3, in <module>
    import yaml.constructor
ModuleNotFoundError: No module named 'yaml'
"""


def test_a_missing_python_module_names_its_distribution_and_the_build() -> None:
    cause = missing_dependency(TRACEBACK, "x", "docker")
    assert cause.startswith("the script imports yaml, which this environment lacks: add PyYAML")
    assert "`workbench env build --skill x --posture docker`" in cause


def test_the_last_sign_wins_and_each_kind_is_read() -> None:
    shell = "sh: 1: soffice: not found\n"
    assert "Debian package libreoffice-nogui" in missing_dependency(
        TRACEBACK + shell, "x", "gvisor"
    )
    bash = "bash: line 1: pdftotext: command not found\n"
    assert "poppler-utils" in missing_dependency(bash, "x", "local")
    spawned = "FileNotFoundError: [Errno 2] No such file or directory: 'pdftoppm'\n"
    assert "runs pdftoppm" in missing_dependency(spawned, "x", "hardened")
    node = "Error: Cannot find module 'left-pad/index.js'\nRequire stack:\n"
    assert "Node package left-pad" in missing_dependency(node, "x", "docker")


def test_nothing_is_claimed_for_other_failures() -> None:
    assert missing_dependency("Traceback...\nValueError: bad input\n", "x", "docker") == ""
    assert missing_dependency("ModuleNotFoundError: No module named 'tomllib'\n", "x", "x") == ""
    assert missing_dependency("Error: Cannot find module './local'\n", "x", "docker") == ""
