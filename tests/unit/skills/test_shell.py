"""Shell read as a shell reads it: commands, not the words of heredocs, strings or code."""

from workbench.skills.scripts import Capability
from workbench.skills.shell import expand, parse
from workbench.skills.shellscan import command_tools, scan_shell

BUILDER = """\
#!/bin/bash
set -euo pipefail
mkdir -p src
cat > src/App.jsx <<'EOF'
const App = () => <div className="--accent">hi</div>;
export default App;
EOF
cat <<-EOT > index.css
	:root { --accent: #fff; }
	EOT
node -e 'const fs = require("fs"); var x = 1; console.log(x)'
python3 -c "import json; print(json.dumps({}))"
echo "const x = 1; --accent; EOF"
command -v pnpm >/dev/null 2>&1 || npm install -g pnpm
greet() { printf '%s\\n' "$1"; }
greet world
case "${1:-build}" in
  build|b) npx vite build ;;
  serve) python3 -m http.server 8000 & ;;
esac
"""


def test_heredocs_strings_and_code_bodies_are_not_commands() -> None:
    names = [c.name for c in parse(BUILDER).commands]
    assert names == [
        "set", "mkdir", "cat", "cat", "node", "python3", "echo", "command", "npm", "printf",
        "greet", "npx", "python3",
    ]  # fmt: skip
    tools = {f.tool for f in scan_shell(BUILDER, "build.sh") if f.tool}
    assert tools == {"bash", "mkdir", "cat", "node", "python3", "npm", "npx"}
    heredoc = next(c for c in parse(BUILDER).commands if c.stdin)
    assert heredoc.stdin is not None and "export default App;" in heredoc.stdin


def test_inline_code_is_scanned_in_its_own_language() -> None:
    found = scan_shell(BUILDER, "build.sh")
    assert any(f.capability is Capability.NODE_API and f.line == 11 for f in found)
    assert any(f.capability is Capability.SERVER for f in found)  # python3 -m http.server
    assert not any(f.tool in ("const", "var", "EOF", "--accent", "greet") for f in found)


def test_a_program_the_script_checks_for_first_is_optional() -> None:
    found = scan_shell(BUILDER, "build.sh")
    npm = [f for f in found if f.tool == "npm"]
    assert npm and all(not f.optional for f in npm)  # npm itself is not looked for
    text = "if command -v nc >/dev/null; then nc -z localhost 80; fi\n"
    (nc,) = [f for f in scan_shell(text, "x.sh") if f.tool == "nc"]
    assert nc.optional and nc.capability is Capability.LOOPBACK


def test_arguments_and_variables_resolve_the_paths_a_script_touches() -> None:
    script = 'out=$1; dir="$out/reports"\nmkdir -p "$dir"\nprintf x > "$dir/a.txt"\ncat -- "$2"\n'
    found = scan_shell(script, "save.sh", args=("/srv/data", "/etc/hostname"))
    writes = {f.target for f in found if f.capability is Capability.WRITE_OUTSIDE}
    reads = {f.target for f in found if f.capability is Capability.HOST_FILES}
    assert writes == {"/srv/data/reports", "/srv/data/reports/a.txt"}
    assert reads == {"/etc/hostname"}
    assert not [f for f in scan_shell(script, "save.sh") if f.target]  # no args: unknown


def test_background_processes_loops_and_memory() -> None:
    script = (
        "while :; do i=$((i + 1)); done\n"
        'n=0; while [ "$n" -lt 9 ]; do sleep 5 & n=$((n + 1)); done\n'
        'while true; do s="$s$s"; sleep 1; done\n'
        "setsid sleep 100 &\n"
    )
    found = {(f.line, f.capability) for f in scan_shell(script, "x.sh")}
    assert (1, Capability.CPU) in found  # endless and never waits
    assert (2, Capability.PROCESSES) in found
    assert (3, Capability.MEMORY) in found and (3, Capability.CPU) not in found  # it sleeps
    assert (4, Capability.DAEMON) in found


def test_command_tools_of_one_line() -> None:
    assert command_tools('for x in a; do sudo -n env A=1 grep -q x "$x"; done') == [
        "sudo",
        "env",
        "grep",
    ]
    assert command_tools('cd "$SKILL_DIR" && "$SKILL_DIR/run" | /usr/bin/jq . || timeout 5 ls') == [
        "jq",
        "timeout",
        "ls",
    ]
    assert command_tools("echo $(date) `whoami`") == ["date", "whoami"]
    assert command_tools("command -v jq && exec jq .") == ["jq"]


def test_expand_replaces_what_it_knows_and_refuses_the_rest() -> None:
    assert expand("$d/${name}.txt", {"d": "/x", "name": "a"}) == "/x/a.txt"
    assert expand("${n:-30}", {}) == "30"
    assert expand("$unknown/x", {}) is None
    assert expand("$(date)", {}) is None
