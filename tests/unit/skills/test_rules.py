"""Spec rules: what each diagnostic says, where it points, and how severe it is."""

from pathlib import Path

import pytest

from workbench.skills import Code, Diagnostic, DiagnosticSeverity, load_skill
from workbench.skills.rules import check_body, check_front_matter, suggest_name

FILE = Path("/skills/my-skill/SKILL.md")
FOLDER = FILE.parent


def check(front_matter: dict[str, object], lines: dict[str, int] | None = None) -> list[Diagnostic]:
    return check_front_matter(front_matter, lines or {}, FOLDER, FILE)


def test_capital_letters_message_points_at_the_name_line() -> None:
    problems = check({"name": "My-Skill", "description": "x"}, {"name": 2})
    case = next(p for p in problems if p.code is Code.NAME_CASE)
    assert case.message == (
        "The name 'My-Skill' has capital letters; use lowercase letters, digits and hyphens, "
        "like 'my-skill'."
    )
    assert str(case) == f"{FILE}:2: error: {case.message}"
    assert case.severity is DiagnosticSeverity.ERROR and case.is_error


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("My_PDF Tool", "my-pdf-tool"),
        ("--a--b--", "a-b"),
        ("!!!", "my-skill"),
        ("x" * 70, "x" * 64),
    ],
)
def test_suggest_name(name: str, suggestion: str) -> None:
    assert suggest_name(name) == suggestion


def test_missing_name_falls_back_to_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "report-writer"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\ndescription: Writes reports.\n---\n")
    skill = load_skill(folder)
    assert skill.name == "report-writer"
    assert skill.usable and not skill.valid
    [problem] = skill.diagnostics
    assert "add 'name: report-writer'" in problem.message


def test_missing_description_is_an_error_at_line_one() -> None:
    [problem] = check({"name": "my-skill"})
    assert (problem.code, problem.severity, problem.line) == (
        Code.DESCRIPTION_MISSING,
        DiagnosticSeverity.ERROR,
        1,
    )


@pytest.mark.parametrize(
    ("value", "kind"), [(["a", "b"], "a list of 2 items"), ({"a": "b"}, "a mapping of 1 key")]
)
def test_a_description_that_is_not_text_says_what_it_is(value: object, kind: str) -> None:
    [problem] = check({"name": "my-skill", "description": value})
    assert problem.code is Code.DESCRIPTION_NOT_TEXT and problem.is_error
    assert problem.message.startswith(f"The description is {kind}, not text.")


def test_a_name_that_is_not_text_says_what_it_is() -> None:
    [problem] = check({"name": ["my-skill"], "description": "x"})
    assert problem.code is Code.NAME_NOT_TEXT and problem.is_error
    assert "The name is a list of 1 item, not text" in problem.message


def test_a_list_description_read_from_yaml_leaves_the_skill_unusable(tmp_path: Path) -> None:
    folder = tmp_path / "listed"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: listed\ndescription:\n  - one\n  - two\n---\n")
    skill = load_skill(folder)
    [problem] = skill.diagnostics
    assert (problem.code, problem.line) == (Code.DESCRIPTION_NOT_TEXT, 3)
    assert not skill.usable and not skill.valid


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"compatibility": "x" * 501}, Code.COMPATIBILITY_INVALID),
        ({"compatibility": ["linux"]}, Code.COMPATIBILITY_INVALID),
        ({"metadata": ["a"]}, Code.METADATA_INVALID),
        ({"metadata": ""}, Code.METADATA_INVALID),
        ({"metadata": {"a": {"b": "c"}}}, Code.METADATA_INVALID),
        ({"allowed-tools": {"Bash": "x"}}, Code.ALLOWED_TOOLS_INVALID),
        ({"allowed-tools": ["Read", ["Write"]]}, Code.ALLOWED_TOOLS_INVALID),
        ({"version": "1"}, Code.UNKNOWN_KEY),
    ],
)
def test_field_rules(extra: dict[str, object], code: Code) -> None:
    [problem] = check({"name": "my-skill", "description": "x", **extra})
    assert problem.code is code and problem.is_error


@pytest.mark.parametrize(
    "extra",
    [
        {"compatibility": "x" * 500},
        {"metadata": {"command": "run", "version": "1.0"}},
        {"allowed-tools": "Bash Read"},
        {"allowed-tools": ["Bash", "Read"]},
        {"license": "MIT"},
    ],
)
def test_fields_within_the_spec(extra: dict[str, object]) -> None:
    assert check({"name": "my-skill", "description": "x", **extra}) == []


def test_name_rules_follow_skills_ref() -> None:
    problems = check({"name": "-Bad_Name--", "description": "x"})
    assert {p.code for p in problems} == {
        Code.NAME_CASE,
        Code.NAME_HYPHENS,
        Code.NAME_CHARACTERS,
        Code.NAME_MISMATCH,
    }
    assert "'_'" in next(p.message for p in problems if p.code is Code.NAME_CHARACTERS)


def test_name_is_nfkc_normalised_and_stripped() -> None:
    fullwidth = "\N{FULLWIDTH LATIN SMALL LETTER M}\N{FULLWIDTH LATIN SMALL LETTER Y}-skill"
    assert check({"name": fullwidth, "description": "x"}) == []
    assert check({"name": "  my-skill ", "description": "x"}) == []


def test_field_messages_name_the_kind_of_a_misplaced_value() -> None:
    [compatibility] = check({"name": "my-skill", "description": "x", "compatibility": ["a"]})
    assert "(it is a list of 1 item)" in compatibility.message
    [metadata] = check({"name": "my-skill", "description": "x", "metadata": {"a": ["b", "c"]}})
    assert "'a' holds a list of 2 items" in metadata.message
    [tools] = check({"name": "my-skill", "description": "x", "allowed-tools": {"Bash": "x"}})
    assert "it is a mapping of 1 key" in tools.message


def test_body_advice() -> None:
    long_body = "line\n" * 501
    dense_body = "x" * 20_004
    assert [p.code for p in check_body(long_body, FILE, 5)] == [Code.BODY_TOO_LONG]
    [tokens] = check_body(dense_body, FILE, 5)
    assert tokens.code is Code.BODY_TOO_MANY_TOKENS
    assert "5,001 tokens" in tokens.message
    assert not tokens.is_error
    assert check_body("line\n" * 500, FILE, 5) == []


def test_control_and_bidi_characters_in_a_description_are_reported() -> None:
    problems = check({"name": "my-skill", "description": "Hi\x1b]0;PWNED\x07 evil\u202etxt"})
    hidden = next(p for p in problems if p.code is Code.DESCRIPTION_CONTROL_CHARACTERS)
    assert "(U+0007, U+001B, U+202E)" in hidden.message
    assert hidden.severity is DiagnosticSeverity.WARNING and not hidden.is_error
    plain = check({"name": "my-skill", "description": "Two lines,\n\ttab and עברית."})
    assert not any(p.code is Code.DESCRIPTION_CONTROL_CHARACTERS for p in plain)
