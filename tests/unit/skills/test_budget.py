"""The budget meter: metadata, body and resources against the spec's advice."""

from pathlib import Path

from workbench.skills import load_skill
from workbench.skills.budget import TOP_LEVEL, body_sections, budget


def write_skill(folder: Path, description: str, body: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {folder.name}\ndescription: {description}\n---\n{body}"
    )
    return folder


def test_a_small_skill_is_within_budget_and_gets_no_advice(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "small", "Small.", "# Small\n\nShort body.\n")
    (folder / "references").mkdir()
    (folder / "references" / "a.md").write_text("x" * 1000)
    (folder / "references" / "deep").mkdir()
    (folder / "references" / "deep" / "b.md").write_text("y" * 24)
    measured = budget(load_skill(folder))
    assert (measured.metadata_over, measured.body_over, measured.advice) == (False, False, ())
    assert measured.body_lines == 3
    sizes = {r.name: (r.size, r.files) for r in measured.resources}
    assert sizes == {"references/": (1024, 2)}


def test_resources_count_every_folder_and_the_files_beside_skill_md(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "loose", "Loose.", "Body.\n")
    (folder / "reference").mkdir()
    (folder / "reference" / "guide.md").write_text("g" * 100)
    (folder / "reference.md").write_text("r" * 40)
    (folder / "forms.md").write_text("f" * 2)
    measured = budget(load_skill(folder))
    sizes = {r.name: (r.size, r.files) for r in measured.resources}
    assert sizes == {"reference/": (100, 1), TOP_LEVEL: (42, 2)}


def test_long_metadata_is_over_and_advised(tmp_path: Path) -> None:
    measured = budget(load_skill(write_skill(tmp_path / "wordy", "word " * 100, "Body.\n")))
    assert measured.metadata_over
    assert measured.metadata_tokens > 100
    assert "spec advises about 100" in measured.advice[0]


def test_a_long_body_names_its_largest_sections_to_move(tmp_path: Path) -> None:
    body = (
        "Intro line.\n\n## Small part\n\nA little.\n\n"
        + "## Huge reference\n\n"
        + "detail line of text here\n" * 450
        + "## Medium part\n\n"
        + "medium\n" * 100
    )
    skill = load_skill(write_skill(tmp_path / "long", "Long.", body))
    measured = budget(skill)
    assert measured.body_over
    assert [s.heading for s in measured.largest_sections] == [
        "## Huge reference",
        "## Medium part",
        "## Small part",
    ]
    huge = measured.largest_sections[0]
    assert huge.line == skill.body_start_line + 6
    assert huge.lines == 452
    assert "Move the largest sections into references/" in measured.advice[0]
    assert f"'## Huge reference' (line {huge.line}, 452 lines" in measured.advice[0]


def test_a_long_body_without_headings_says_to_split_it(tmp_path: Path) -> None:
    skill = load_skill(write_skill(tmp_path / "flat", "Flat.", "line\n" * 600))
    measured = budget(skill)
    assert measured.largest_sections[0].heading == "(before the first heading)"
    assert measured.body_over


def test_headings_inside_code_fences_do_not_split_sections() -> None:
    body = "# Top\n\n```sh\n# a comment, not a heading\n```\n## Next ##\ntext\n"
    sections = body_sections(body, first_line=5)
    assert [(s.heading, s.line, s.lines) for s in sections] == [
        ("# Top", 5, 5),
        ("## Next", 10, 2),
    ]
