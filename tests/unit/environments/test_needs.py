"""What a skill declares and what its scripts are found to need, read without running it."""

from pathlib import Path

import pytest

from workbench.environments.names import canonical, distribution_of
from workbench.environments.needs import parse_requirement, read_needs
from workbench.skills.catalog import load_skill
from workbench.skills.scripts import python_imports


def make_skill(folder: Path, files: dict[str, str], front: str = "") -> Path:
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: {folder.name}\ndescription: A test skill.\n{front}---\n\nBody.\n"
    )
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


SCRIPT = """
import os, sys, json
import yaml
from docx import Document
from PIL import Image
import google.protobuf
from helpers.tables import render
from . import sibling
import helpers
try:
    import simplejson as fast_json
except ImportError:
    fast_json = json
import subprocess
subprocess.run(["pdftotext", "in.pdf", "out.txt"])
subprocess.run(["frobnicate-xyz"])
"""


def test_imports_map_to_distributions_without_stdlib_or_the_skills_own_modules(
    tmp_path: Path,
) -> None:
    skill = make_skill(
        tmp_path / "reader",
        {"scripts/read.py": SCRIPT, "scripts/helpers/tables.py": "def render(): pass\n"},
        front="compatibility: Needs poppler for PDF text\n",
    )
    needs = read_needs(load_skill(skill))
    inferred = {item.distribution: item for item in needs.inferred}
    assert set(inferred) == {"PyYAML", "python-docx", "pillow", "protobuf", "simplejson"}
    assert inferred["PyYAML"].places == ("scripts/read.py:3",)
    assert inferred["simplejson"].optional
    assert needs.python == ("pillow", "protobuf", "python-docx", "PyYAML")
    assert [(tool.name, tool.package) for tool in needs.tools] == [("pdftotext", "poppler-utils")]
    assert needs.system == ("poppler-utils",)
    assert needs.compatibility == "Needs poppler for PDF text"
    assert needs.declared_in == ()


def test_a_requirements_file_is_the_proposal_and_refuses_what_is_not_a_package(
    tmp_path: Path,
) -> None:
    requirements = (
        "# pinned\nPyYAML==6.0.2 --hash=sha256:abc\nsix>=1.16 ; python_version >= '3'\n"
        "-r other.txt\n--index-url http://elsewhere.example/simple\n"
        "git+https://example.org/x.git\nname @ https://example.org/x.whl\n./local\n"
        "pdf2image\n"
    )
    skill = make_skill(
        tmp_path / "declared",
        {"scripts/requirements.txt": requirements, "scripts/x.py": "import requests\n"},
    )
    needs = read_needs(load_skill(skill))
    assert needs.declared_in == ("scripts/requirements.txt",)
    assert needs.python == ("PyYAML==6.0.2", "six>=1.16 ; python_version >= '3'", "pdf2image")
    assert len(needs.refused) == 5
    assert all(line.startswith("scripts/requirements.txt:") for line in needs.refused)
    assert needs.system == ("poppler-utils",)  # pdf2image runs poppler's pdftoppm


def test_package_json_dependencies_are_node_packages_of_the_registry(tmp_path: Path) -> None:
    package = (
        '{"name": "x", "scripts": {"postinstall": "curl evil"}, "dependencies": '
        '{"left-pad": "^1.3.0", "@scope/pkg": "1.x", "mine": "file:../mine", '
        '"remote": "git+https://example.org/r.git", "Bad Name": "1"}}'
    )
    skill = make_skill(tmp_path / "node", {"package.json": package})
    needs = read_needs(load_skill(skill))
    assert needs.node == ("left-pad@^1.3.0", "@scope/pkg@1.x")
    assert needs.node_in == ("package.json",)
    assert len(needs.refused) == 3


def test_a_hostile_skill_gets_bounded_reads_and_no_links_followed(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "hostile", {"scripts/a.py": "import yaml\n"})
    (skill / "requirements.txt").symlink_to("/etc/passwd")
    (skill / "scripts" / "broken.py").write_text("def (:\n")
    (skill / "package.json").write_text("{not json")
    needs = read_needs(load_skill(skill))
    assert needs.declared_in == ()  # the link is not read
    assert needs.python == ("PyYAML",)
    assert needs.refused == ("package.json: not valid JSON",)


def test_optional_imports_are_those_an_import_error_handler_guards() -> None:
    found = python_imports(
        "import a\ntry:\n    import b\nexcept (ImportError, OSError):\n    pass\n"
        "try:\n    import c\nexcept ValueError:\n    pass\nfrom .d import e\n"
    )
    assert [(i.module, i.optional) for i in found] == [("a", False), ("b", True), ("c", False)]
    assert python_imports("def (:") == []


@pytest.mark.parametrize(
    ("module", "distribution"),
    [("yaml", "PyYAML"), ("docx.shared", "python-docx"), ("google.protobuf.message", "protobuf"),
     ("pypdf", "pypdf"), ("fitz", "PyMuPDF"), ("cv2", "opencv-python")],
)  # fmt: skip
def test_import_names_map_to_distributions(module: str, distribution: str) -> None:
    assert distribution_of(module) == distribution


def test_requirement_lines() -> None:
    assert parse_requirement("PyYAML[extra]>=6,<7; python_version>'3.8'") is not None
    assert parse_requirement("pkg==1.0 --hash=sha256:00") == "pkg==1.0"
    for bad in ("-e .", "http://x/y.whl", "pkg @ https://x", "../pkg", "pkg; rm -rf /@x"):
        assert parse_requirement(bad) is None, bad
    assert canonical("Ruamel_Yaml.Clib") == canonical("ruamel-yaml-clib")
