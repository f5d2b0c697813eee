"""Starting the workbench's own modules as children, from source and as a frozen app would."""

import json
import site
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.platform import interpreter

# What a frozen entry script does first (see packaging/pyinstaller/entry.py).
ENTRY = (
    "import sys; from workbench.platform.interpreter import run_internal; run_internal(sys.argv); "
)


def test_a_module_runs_isolated_by_name(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"b": [1, 2]}')
    argv = interpreter.child_argv("json.tool")
    assert argv[:2] == (sys.executable, "-I")
    done = subprocess.run(
        [*argv, "--compact", str(source)], capture_output=True, text=True, check=True
    )
    assert done.stdout == '{"b":[1,2]}\n'


def test_a_function_call_child_exits_with_the_result_of_its_call_on_sys_argv() -> None:
    argv = interpreter.child_call_argv("operator", "length_hint")  # len(sys.argv), as an int
    assert argv[:2] == (sys.executable, "-I") and "-m" not in argv
    done = subprocess.run([*argv, "a", "b"], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr  # ["-c", "a", "b"]


def test_a_function_call_child_never_imports_from_its_working_folder(tmp_path: Path) -> None:
    (tmp_path / "planted_worker.py").write_text("def main(argv):\n    return 42\n")
    argv = interpreter.child_call_argv("planted_worker", "main")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr


def _module(folder: Path, name: str, returns: str) -> None:
    """A module `name` in `folder` whose `main(argv)` returns the value of `returns`."""
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(f"import sys\n\ndef main(argv):\n    return {returns}\n")


def test_a_function_call_child_skips_site_and_imports_what_it_needs_from_the_installed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed, lent = tmp_path / "site-packages", tmp_path / "lent"  # lent: as by a .pth file
    _module(lent, "needed_here", "1 if 'site' in sys.modules else 7")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(installed)])
    monkeypatch.setattr(sys, "path", [*sys.path, str(installed), str(lent)])
    argv = interpreter.child_call_argv("needed_here", "main", needs=("needed_here",))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 7, done.stderr  # found where installed, started without site


def test_a_needed_folder_keeps_its_place_before_the_workbench_s_on_the_child_s_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed, lent = tmp_path / "site-packages", tmp_path / "lent"
    ours = str(Path(interpreter.__file__).parents[2])  # the folder holding the workbench
    ahead = f"7 if sys.path.index({str(lent)!r}) < sys.path.index({ours!r}) else 1"
    _module(lent, "needed_ahead", ahead)
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(installed)])
    monkeypatch.setattr(sys, "path", [str(installed), str(lent), *sys.path])
    argv = interpreter.child_call_argv("needed_ahead", "main", needs=("needed_ahead",))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 7, done.stderr


def test_a_needed_module_is_taken_from_no_other_folder_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in (tmp_path, tmp_path / "elsewhere"):  # the working folder, as `python -m` puts
        _module(folder, "planted_need", "42")  # it first; a PYTHONPATH folder
        monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(tmp_path)
    argv = interpreter.child_call_argv("planted_need", "main", needs=("planted_need",))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr


def test_a_frozen_app_runs_its_modules_through_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert interpreter.child_argv("a.module") == (
        sys.executable,
        interpreter.INTERNAL_FLAG,
        "a.module",
    )
    assert interpreter.child_call_argv("a.module", "main") == interpreter.child_argv("a.module")


def test_the_entry_runs_the_named_module_with_its_arguments_and_exits(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"a": 1}))
    code = ENTRY + "print('the app itself')"
    internal = [interpreter.INTERNAL_FLAG, "json.tool", "--compact", str(source)]
    done = subprocess.run(
        [sys.executable, "-c", code, *internal], capture_output=True, text=True, check=True
    )
    assert done.stdout == '{"a":1}\n'
    done = subprocess.run(
        [sys.executable, "-c", code, "skills", "list"], capture_output=True, text=True, check=True
    )
    assert done.stdout == "the app itself\n"


def test_the_entry_passes_a_module_s_exit_code_on() -> None:
    code = ENTRY + "print('the app itself')"
    internal = [interpreter.INTERNAL_FLAG, "json.tool", "/no/such/file.json"]
    done = subprocess.run([sys.executable, "-c", code, *internal], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr  # json.tool's (argparse's) code for a missing file
    assert "/no/such/file.json" in done.stderr
    assert done.stdout == ""


def test_the_bootloader_s_variables_are_taken_out_and_the_user_s_library_path_restored() -> None:
    environ = {
        "LD_LIBRARY_PATH": "/opt/app/_internal:/usr/local/lib",
        "LD_LIBRARY_PATH_ORIG": "/usr/local/lib",
        "_PYI_ARCHIVE_FILE": "/opt/app/workbench",
        "_PYI_PARENT_PROCESS_LEVEL": "1",
        "HOME": "/home/ada",
    }
    interpreter.clean_frozen_environment(environ)
    assert environ == {"LD_LIBRARY_PATH": "/usr/local/lib", "HOME": "/home/ada"}
    environ = {"LD_LIBRARY_PATH": "/opt/app/_internal", "PATH": "/usr/bin"}
    interpreter.clean_frozen_environment(environ)
    assert environ == {"PATH": "/usr/bin"}
