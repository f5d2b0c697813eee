"""Splitting SKILL.md and building its front matter: lines, scalars as text, bounds."""

from pathlib import Path

from workbench.skills import Code
from workbench.skills.frontmatter import MAX_FRONT_MATTER_CHARS, parse_skill_md

FILE = Path("SKILL.md")


def test_split_gives_body_and_its_first_line() -> None:
    text = "---\nname: demo\ndescription: Does things.\n---\n# Title\n\nBody.\n"
    document = parse_skill_md(text, FILE)
    assert document.front_matter == {"name": "demo", "description": "Does things."}
    assert document.key_lines == {"name": 2, "description": 3}
    assert document.body == "# Title\n\nBody.\n"
    assert document.body_start_line == 5
    assert document.diagnostics == ()


def test_crlf_line_endings() -> None:
    document = parse_skill_md("---\r\nname: demo\r\n---\r\nBody\r\n", FILE)
    assert document.front_matter == {"name": "demo"}
    assert document.body == "Body\r\n"
    assert document.body_start_line == 4


def test_scalars_stay_text_like_strictyaml() -> None:
    text = "---\nversion: 1.0\nflag: yes\nnothing: ~\nempty:\nwhen: 2025-01-01\n---\n"
    assert parse_skill_md(text, FILE).front_matter == {
        "version": "1.0",
        "flag": "yes",
        "nothing": "~",
        "empty": "",
        "when": "2025-01-01",
    }


def test_nested_values_and_block_scalars() -> None:
    text = "---\nd: >\n  folded\n  text\nm:\n  k: v\nl:\n  - a\n  - b\n---\n"
    assert parse_skill_md(text, FILE).front_matter == {
        "d": "folded text\n",
        "m": {"k": "v"},
        "l": ["a", "b"],
    }


def test_a_closing_line_inside_a_value_is_not_confused_with_dashes_in_text() -> None:
    text = "---\ndescription: before --- after\n---\nbody\n"
    document = parse_skill_md(text, FILE)
    assert document.front_matter == {"description": "before --- after"}
    assert document.body == "body\n"


def test_syntax_error_points_at_its_file_line() -> None:
    document = parse_skill_md("---\nname: a\ndescription: x: y\n---\n", FILE)
    [problem] = document.diagnostics
    assert (problem.code, problem.line) == (Code.YAML_SYNTAX, 3)
    assert "not valid YAML" in problem.message
    assert document.front_matter is None


def test_empty_front_matter_is_not_a_mapping() -> None:
    [problem] = parse_skill_md("---\n---\nbody\n", FILE).diagnostics
    assert problem.code is Code.NOT_A_MAPPING


def test_second_document_is_refused() -> None:
    [problem] = parse_skill_md("---\nname: a\n--- second\n---\n", FILE).diagnostics
    assert (problem.code, problem.line) == (Code.YAML_SYNTAX, 3)
    assert "more than one YAML document" in problem.message


def test_duplicate_key_points_at_the_second() -> None:
    [problem] = parse_skill_md("---\nname: a\nx: 1\nname: b\n---\n", FILE).diagnostics
    assert (problem.code, problem.line) == (Code.DUPLICATE_KEY, 4)


def test_complex_key_is_refused() -> None:
    [problem] = parse_skill_md("---\n? [a, b]\n: c\n---\n", FILE).diagnostics
    assert problem.code is Code.YAML_SYNTAX
    assert "not plain text" in problem.message


def test_small_aliases_expand_with_a_warning() -> None:
    document = parse_skill_md("---\na: &x [1, 2]\nb: *x\n---\n", FILE)
    assert document.front_matter == {"a": ["1", "2"], "b": ["1", "2"]}
    assert [d.code for d in document.diagnostics] == [Code.YAML_FLOW_STYLE, Code.YAML_ALIAS]
    assert [d.line for d in document.diagnostics] == [2, 3]


def test_front_matter_size_is_capped() -> None:
    text = "---\ndescription: " + "x" * MAX_FRONT_MATTER_CHARS + "\n---\n"
    [problem] = parse_skill_md(text, FILE).diagnostics
    assert problem.code is Code.FRONT_MATTER_TOO_LARGE


def test_missing_delimiters() -> None:
    [no_open] = parse_skill_md("# Title\n", FILE).diagnostics
    [no_close] = parse_skill_md("---\nname: a\n", FILE).diagnostics
    assert (no_open.code, no_close.code) == (Code.NO_FRONT_MATTER, Code.UNCLOSED_FRONT_MATTER)


def test_an_unclosed_quote_is_blamed_on_the_line_that_opens_it() -> None:
    text = '---\nname: a\ndescription: "never closed\nlicense: MIT\nmetadata: x\n---\n'
    [problem] = parse_skill_md(text, FILE).diagnostics
    assert (problem.code, problem.line) == (Code.YAML_SYNTAX, 3)
    assert "on line 6" in problem.message  # where the scanner gave up, said too


def test_an_unclosed_bracket_is_blamed_on_the_line_that_opens_it() -> None:
    text = "---\nname: a\nallowed-tools: [Read, Write\nlicense: MIT\n---\n"
    [problem] = parse_skill_md(text, FILE).diagnostics
    assert (problem.code, problem.line) == (Code.YAML_SYNTAX, 3)


def test_a_stray_line_after_a_mapping_is_blamed_on_itself() -> None:
    [problem] = parse_skill_md("---\nname: a\ndescription: b\n- item\n---\n", FILE).diagnostics
    assert (problem.code, problem.line) == (Code.YAML_SYNTAX, 4)


def test_flow_style_is_warned_about_once_naming_every_line() -> None:
    text = "---\nname: a\nallowed-tools: [Read, [Write]]\nmetadata: {a: b}\n---\n"
    [warning] = parse_skill_md(text, FILE).diagnostics
    assert (warning.code, warning.line) == (Code.YAML_FLOW_STYLE, 3)
    assert warning.message.startswith("Lines 3 and 4 use YAML flow style")
