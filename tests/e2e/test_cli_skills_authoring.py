"""`workbench skills new|package|import|preview` and the budget in `show`, run as a user would."""

import subprocess
import zipfile
from pathlib import Path
from typing import Any

from tests.e2e.test_cli_skills import document as schema_document
from tests.e2e.test_cli_skills import workbench


def document(result: subprocess.CompletedProcess[str], kind: str) -> dict[str, Any]:
    """The one JSON document of a command that succeeded."""
    assert result.returncode == 0, result.stderr
    return schema_document(result, kind)


def test_new_package_import_round_trip(tmp_path: Path) -> None:
    created = workbench(
        "skills", "new", "hello-skill", "--description", "Says hello.", "--folders",
        "scripts,references", "--json", cwd=tmp_path,
    )  # fmt: skip
    payload = document(created, "skill-new")
    folder = tmp_path / "skills" / "hello-skill"
    assert payload["path"] == str(folder.absolute())
    assert payload["skill"]["valid"] is True
    validated = workbench("skills", "validate", str(folder), cwd=tmp_path)
    assert validated.returncode == 0, validated.stdout

    packaged = workbench("skills", "package", str(folder), "--json", cwd=tmp_path)
    package = Path(document(packaged, "skill-package")["path"])
    assert package == tmp_path / "hello-skill.skill"
    assert "hello-skill/SKILL.md" in zipfile.ZipFile(package).namelist()

    imported = workbench("skills", "import", str(package), "--root", "other", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    copy = tmp_path / "other" / "hello-skill"
    assert imported.stdout == f"Imported {copy}\n"
    for path in folder.rglob("*"):
        twin = copy / path.relative_to(folder)
        assert twin.stat().st_mode == path.stat().st_mode
        assert path.is_dir() or twin.read_bytes() == path.read_bytes()

    again = workbench("skills", "import", str(package), "--root", "other", cwd=tmp_path)
    assert again.returncode == 1
    assert "already exists; the workbench never overwrites a folder" in again.stderr


def test_package_refuses_a_skill_that_breaks_the_spec_unless_forced(tmp_path: Path) -> None:
    folder = tmp_path / "wordy-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: wordy-skill\ndescription: {'x' * 1068}\n---\n")
    refused = workbench("skills", "package", str(folder), cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: workbench skills package: the skill breaks the spec")
    assert "The description is 1,068 characters; the limit is 1,024" in refused.stderr
    assert "--force writes it anyway" in refused.stderr
    assert not list(tmp_path.glob("*.skill"))
    forced = workbench("skills", "package", str(folder), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "warning: wordy-skill breaks the spec (1 error)" in forced.stderr
    assert (tmp_path / "wordy-skill.skill").is_file()


def test_new_refuses_a_bad_name_as_a_usage_error(tmp_path: Path) -> None:
    result = workbench("skills", "new", "Bad_Name", "--description", "x", cwd=tmp_path)
    assert result.returncode == 2
    assert "The name 'Bad_Name' has capital letters" in result.stderr
    assert not (tmp_path / "skills").exists()


def test_import_refuses_a_traversal_zip_and_writes_nothing(tmp_path: Path) -> None:
    hostile = tmp_path / "evil.skill"
    with zipfile.ZipFile(hostile, "w") as archive:
        archive.writestr("evil/SKILL.md", "---\nname: evil\ndescription: x\n---\n")
        archive.writestr("evil/../../pwned.txt", "gotcha")
    result = workbench("skills", "import", str(hostile), "--root", "dest", cwd=tmp_path)
    assert result.returncode == 1
    assert "climbs out of its folder" in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "dest").exists()
    assert not (tmp_path.parent / "pwned.txt").exists()


def test_preview_text_and_json_say_it_is_a_prediction(tmp_path: Path) -> None:
    folder = tmp_path / "fetcher"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: fetcher\ndescription: Fetches \x1b[31mred\x1b[0m.\n---\nBody.\n"
    )
    (folder / "scripts" / "get.sh").write_text("#!/bin/sh\ncurl -s https://example.com\n")
    text = workbench("skills", "preview", str(folder), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "PREDICTION, NOT A SECURITY CONTROL" in text.stdout
    assert "  docker: partly-blocked\n" in text.stdout
    assert "    blocked: network command curl in scripts/get.sh:2 (network none)" in text.stdout
    assert "not in the sandbox image: curl" in text.stdout
    payload = document(workbench("skills", "preview", str(folder), "--json", cwd=tmp_path),
                       "skill-preview")  # fmt: skip
    assert payload["prediction_only"] is True
    assert payload["notice"].startswith("PREDICTION, NOT A SECURITY CONTROL")
    assert payload["missing_tools"] == ["curl"]
    local = next(p for p in payload["predictions"] if p["posture"] == "local")
    assert local["verdict"] == "runs"


def test_show_includes_the_budget(tmp_path: Path) -> None:
    folder = tmp_path / "wordy"
    folder.mkdir()
    body = "# Wordy\n\n## Reference\n\n" + "a long line of reference detail\n" * 600
    (folder / "SKILL.md").write_text(f"---\nname: wordy\ndescription: Wordy.\n---\n{body}")
    text = workbench("skills", "show", str(folder), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "budget: metadata about 3 tokens (advice about 100)" in text.stdout
    assert "advice: The body is 604 lines" in text.stdout
    assert "'## Reference' (line 7, 602 lines" in text.stdout
    payload = document(workbench("skills", "show", str(folder), "--json", cwd=tmp_path), "skill")
    assert payload["budget"]["body_lines"] == 604
    assert payload["budget"]["largest_sections"][0]["heading"] == "## Reference"
