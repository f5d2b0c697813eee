"""Starting the workbench's own modules as children, from source and as a frozen app would."""

import json
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


def test_a_function_call_child_skips_site_and_imports_what_it_needs_from_where_we_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "needed_here.py").write_text(
        "import sys\n\ndef main(argv):\n    return 1 if 'site' in sys.modules else 7\n"
    )
    monkeypatch.syspath_prepend(str(lib))
    argv = interpreter.child_call_argv("needed_here", "main", needs=("needed_here",))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 7, done.stderr  # found in lib, started without site


def test_a_needed_module_is_never_taken_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "planted_need.py").write_text("def main(argv):\n    return 42\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m` puts the working folder first
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
