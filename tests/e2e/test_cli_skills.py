"""`workbench skills list|show|validate` run as a user would: text, JSON and exit codes."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from workbench.platform.paths import example_skills_dir

ORACLE = Path(__file__).parents[1] / "fixtures" / "skills" / "oracle"


def workbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def document(result: subprocess.CompletedProcess[str], kind: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(result.stdout)
    assert payload["schema"] == f"skill-workbench/{kind}/1"
    return payload


def test_list_defaults_to_the_bundled_examples(tmp_path: Path) -> None:
    result = workbench("skills", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "workspace-report  [valid]  Writes report.md" in result.stdout
    assert f"    {example_skills_dir() / 'runaway'}" in result.stdout


def test_list_text_names_why_a_skill_is_unusable() -> None:
    result = workbench("skills", "list", str(ORACLE))
    assert result.returncode == 0, result.stderr
    unusable = "algorithmic-art  [unusable, 1 error]  SKILL.md must start with a line '---'"
    assert unusable in result.stdout
    assert "commit-message-writer\n" in result.stdout
    assert "Commit-Message-Writer  [invalid, 2 errors]  Drafts" in result.stdout


def test_list_json_over_a_directory() -> None:
    result = workbench("skills", "list", str(ORACLE), "--json")
    assert result.returncode == 0, result.stderr
    payload = document(result, "skills-list")
    assert payload["roots"] == [str(ORACLE)]
    by_name = {skill["name"]: skill for skill in payload["skills"]}
    assert len(payload["skills"]) == len(list(ORACLE.iterdir()))
    assert by_name["pdf-processing"]["valid"] is True
    writer = by_name["Commit-Message-Writer"]
    assert (writer["usable"], writer["valid"], writer["errors"]) == (True, False, 2)
    assert writer["warnings"] == 0
    assert by_name["slack-gif-creator"]["usable"] is False


def test_show_by_name_in_text() -> None:
    result = workbench("skills", "show", "workspace-report")
    assert result.returncode == 0, result.stderr
    assert "name: workspace-report  [valid]" in result.stdout
    assert 'command: python3 "$SKILL_DIR/scripts/report.py"' in result.stdout
    assert "  scripts/\n    report.py  " in result.stdout
    assert result.stdout.endswith("problems: none\n")


def test_show_json_has_the_tree_and_diagnostics() -> None:
    result = workbench("skills", "show", str(ORACLE / "commit-message-writer"), "--json")
    assert result.returncode == 0, result.stderr
    skill = document(result, "skill")["skill"]
    first = skill["files"]["children"][0]
    assert (first["name"], first["kind"], first["size"]) == ("SKILL.md", "file", 183)
    assert skill["body_start_line"] == 5
    [case] = [d for d in skill["diagnostics"] if d["code"] == "name-case"]
    assert (case["severity"], case["line"]) == ("error", 2)


def test_validate_exit_codes_and_text_diagnostics() -> None:
    valid = workbench("skills", "validate", str(ORACLE / "pdf-processing"))
    verdict = f"{ORACLE / 'pdf-processing'}: valid (no problems)\n"
    assert (valid.returncode, valid.stdout) == (0, verdict)
    mixed = workbench(
        "skills", "validate", str(ORACLE / "pdf-processing"), str(ORACLE / "excel-helper")
    )
    assert mixed.returncode == 1
    excel_md = ORACLE / "excel-helper" / "SKILL.md"
    assert f"{excel_md}:2: error: The name 'xlsx-helper' differs" in mixed.stdout
    assert f"{ORACLE / 'excel-helper'}: INVALID (1 error)" in mixed.stdout


def test_validate_json() -> None:
    result = workbench("skills", "validate", str(ORACLE / "yaml-exploit"), "--json")
    assert result.returncode == 1
    payload = document(result, "skills-validate")
    assert payload["valid"] is False
    [skill] = payload["skills"]
    assert [d["code"] for d in skill["diagnostics"]] == ["yaml-tag"]
    assert skill["diagnostics"][0]["severity"] == "error"


def test_a_spec_violation_is_an_error_in_text_and_json(tmp_path: Path) -> None:
    folder = tmp_path / "wordy"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: wordy\ndescription: {'x' * 1068}\n---\n")
    text = workbench("skills", "validate", str(folder))
    assert text.returncode == 1
    assert f"{folder / 'SKILL.md'}:3: error: The description is 1,068 characters" in text.stdout
    assert text.stdout.endswith(f"{folder}: INVALID (1 error)\n")
    result = workbench("skills", "validate", str(folder), "--json")
    [skill] = document(result, "skills-validate")["skills"]
    assert (skill["valid"], skill["usable"], skill["errors"], skill["warnings"]) == (
        False, True, 1, 0,
    )  # fmt: skip


def test_usage_errors_exit_2() -> None:
    unknown = workbench("skills", "show", "no-such-skill")
    assert unknown.returncode == 2
    assert "no skill named 'no-such-skill'" in unknown.stderr
    assert unknown.stdout == ""
    missing = workbench("skills", "validate", "./absent/folder")
    assert missing.returncode == 2
    assert "no such skill folder" in missing.stderr
    assert workbench("skills", "validate").returncode == 2
    assert workbench("skills").returncode == 2


def test_list_show_and_validate_never_print_a_skills_escapes(tmp_path: Path) -> None:
    folder = tmp_path / "sneaky"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        '---\nname: sneaky\ndescription: "Hi\\e]0;PWNED\\a\\e[2J evil\\u202Etxt"\n---\nBody.\n'
    )
    outputs = [
        workbench("skills", "list", str(tmp_path)),
        workbench("skills", "show", str(folder)),
        workbench("skills", "validate", str(folder)),
        workbench("skills", "show", str(folder), "--json"),
    ]
    for result in outputs:
        assert result.returncode == 0, result.stderr
        assert not any(c in result.stdout for c in "\x1b\x07\u202e"), result.stdout
    listed, shown, validated, as_json = (result.stdout for result in outputs)
    assert "sneaky  [valid, 1 warning]  Hi\\x1b]0;PWNED\\x07\\x1b[2J evil⟨U+202E⟩txt" in listed
    assert "description: Hi\\x1b]0;PWNED\\x07\\x1b[2J evil⟨U+202E⟩txt" in shown
    assert "warning: The description contains control or bidi characters" in validated
    skill = json.loads(as_json)["skill"]
    assert skill["description"] == "Hi\x1b]0;PWNED\x07\x1b[2J evil\u202etxt"
