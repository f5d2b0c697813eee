"""`fetch` in the quickjs posture, against a real HTTP server on 127.0.0.1 only.

Off by default; when hosts are allowed: an allowed GET works and is logged in the run record
(and in the history's JSON); a host not on the list is refused before any connection; an
oversize response rejects; a slow server rejects at the per-call timeout; a redirect to another
host is returned, not followed; the call cap holds. Nothing here reaches beyond loopback:
refused names are never resolved, so `not-allowed.invalid` never leaves the worker.
"""

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.contract.conftest import Harness
from workbench.executors.quickjs import executor as quickjs
from workbench.executors.quickjs.worker.fetch import Fetcher
from workbench.executors.types import RunResult, RunStatus
from workbench.postures.model import Posture, PostureId
from workbench.runs.history import RunHistory
from workbench.runs.layout import DataLayout
from workbench.runs.record import RunRecord, result_to_dict

pytestmark = pytest.mark.timeout(60)
BIG = 4 * 1024 * 1024 + 1


class Server(ThreadingHTTPServer):
    """A loopback HTTP server that counts the requests it gets."""

    daemon_threads = True
    requests: list[str]
    release: threading.Event


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        self.server.requests.append(f"GET {self.path}")
        if self.path == "/slow":
            self.server.release.wait(10)
            return self.reply(200, b"late")
        if self.path == "/big":
            return self.reply(200, b"x" * BIG)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://not-allowed.invalid/next")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self.reply(200, json.dumps({"hello": "world"}).encode(), "application/json")

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length).decode()
        self.server.requests.append(f"POST {self.path} {body} {self.headers['X-Token']}")
        self.reply(201, body.upper().encode())

    def reply(self, status: int, body: bytes, kind: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.requests, httpd.release = [], threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def js(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(PostureId.QUICKJS, tmp_path)
    yield harness
    harness.close()


def fetch_run(js: Harness, source: str, hosts: tuple[str, ...] = ("127.0.0.1",)) -> RunResult:
    (js.workspace / "main.js").write_text(source)
    posture = Posture(PostureId.QUICKJS, fetch_hosts=hosts).with_limits(timeout_s=20)
    result = js.run("main.js", executor=js.start(posture)).result
    assert result.leftover_processes == 0
    return result


def base(server: Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_fetch_is_undefined_when_off(js: Harness) -> None:
    (js.workspace / "main.js").write_text("console.log(typeof fetch);")
    result = js.run("main.js").result
    assert result.stdout.text == "undefined\n"
    assert result.host_calls == ()
    assert dict(result.card.checks)["fetch off (no network API)"] is True


def test_allowed_get_and_post_work_and_are_logged(js: Harness, server: Server) -> None:
    source = f"""
    async function main() {{
      const r = await fetch("{base(server)}/hello");
      console.log(r.status, r.ok, r.headers["content-type"], JSON.stringify(await r.json()));
      const p = await fetch("{base(server)}/echo", {{method: "post", body: "ping",
                                                    headers: {{"X-Token": "t1"}}}});
      console.log(p.status, await p.text());
    }}
    main();
    """
    result = fetch_run(js, source)
    assert result.status is RunStatus.OK, result.stderr.text
    assert result.stdout.text == '200 true application/json {"hello":"world"}\n201 PING\n'
    assert server.requests == ["GET /hello", "POST /echo ping t1"]
    get, post = result.host_calls
    assert (get.api, get.target, get.allowed) == ("fetch", f"GET {base(server)}/hello", True)
    assert get.outcome == "HTTP 200 OK, 18 bytes"
    assert (post.target, post.outcome) == (f"POST {base(server)}/echo", "HTTP 201 Created, 4 bytes")
    assert 0 < get.t <= post.t < result.wall_seconds
    assert get.duration_s < 5
    checks = dict(result.card.checks)
    assert checks["fetch allowed for 127.0.0.1"] is True
    assert "fetch off (no network API)" not in checks


def test_a_call_at_the_end_of_a_run_is_timed_within_it(js: Harness, server: Server) -> None:
    """The run's clock starts at the spawn, after the workspace's snapshot: a big workspace
    must not push a call's time past the run's end."""
    for index in range(4000):
        (js.workspace / f"file{index}.txt").write_text("x")
    result = fetch_run(js, f'fetch("{base(server)}/hello");')
    assert result.status is RunStatus.OK, result.stderr.text
    (call,) = result.host_calls
    assert call.t > 0 and call.t + call.duration_s < result.wall_seconds


def test_a_host_off_the_list_is_refused_without_connecting(js: Harness, server: Server) -> None:
    port = server.server_address[1]
    source = f"""
    for (const url of ["http://not-allowed.invalid/x", "http://localhost:{port}/hello",
                       "file:///etc/passwd"]) {{
      fetch(url).then(() => console.log("ALLOWED"), (e) => console.log(e.name, e.message));
    }}
    """
    result = fetch_run(js, source)
    assert result.stdout.text.splitlines() == [
        "TypeError fetch http://not-allowed.invalid/x: refused: host 'not-allowed.invalid' "
        "is not in the fetch allow-list",
        f"TypeError fetch http://localhost:{port}/hello: refused: host 'localhost' is not in "
        "the fetch allow-list",
        "TypeError fetch file:///etc/passwd: refused: only http and https URLs can be fetched",
    ]
    assert server.requests == []  # localhost is this very server: it was never contacted
    assert [(c.allowed, c.outcome.split(":")[0]) for c in result.host_calls] == [
        (False, "refused")
    ] * 3
    assert result.host_calls[0].target == "GET http://not-allowed.invalid/x"


def test_an_oversize_response_rejects(js: Harness, server: Server) -> None:
    source = f'fetch("{base(server)}/big").catch((e) => console.log(e.name, e.message));'
    result = fetch_run(js, source)
    assert result.stdout.text == (
        f"TypeError fetch {base(server)}/big: the response is larger than the 4 MiB cap\n"
    )
    (call,) = result.host_calls
    assert call.allowed
    assert call.outcome == "error: the response is larger than the 4 MiB cap"


def test_a_slow_server_rejects_at_the_timeout(
    js: Harness, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quickjs, "FETCH_TIMEOUT_S", 1.0)
    source = f'fetch("{base(server)}/slow").catch((e) => console.log(e.message));'
    started = time.monotonic()
    result = fetch_run(js, source)
    assert result.status is RunStatus.OK
    assert result.stdout.text == f"fetch {base(server)}/slow: timed out after 1 s\n"
    assert time.monotonic() - started < 8
    (call,) = result.host_calls
    assert call.outcome == "error: timed out after 1 s"
    assert 0.9 < call.duration_s < 3


def test_a_redirect_is_returned_not_followed(js: Harness, server: Server) -> None:
    source = f"""
    fetch("{base(server)}/redirect").then((r) => console.log(r.status, r.ok, r.headers.location));
    """
    result = fetch_run(js, source)
    assert result.stdout.text == "302 false http://not-allowed.invalid/next\n"
    assert server.requests == ["GET /redirect"]
    assert [c.outcome for c in result.host_calls] == ["HTTP 302 Found, 0 bytes"]


def test_calls_past_the_cap_are_refused_and_logged_once(
    js: Harness, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quickjs, "FETCH_MAX_CALLS", 2)
    source = f"""
    for (let i = 0; i < 5; i++)
      fetch("{base(server)}/hello").then((r) => console.log(r.status),
                                         (e) => console.log(e.message));
    """
    result = fetch_run(js, source)
    lines = result.stdout.text.splitlines()
    assert lines[:2] == ["200", "200"]
    refusal = "refused: a run makes at most 2 fetch calls (later ones go unlogged)"
    assert lines[2:] == [f"fetch {base(server)}/hello: {refusal}"] * 3
    assert len(server.requests) == 2
    assert [c.allowed for c in result.host_calls] == [True, True, False]
    assert result.host_calls[2].outcome == refusal


def test_subdomain_wildcards_match_subdomains_only() -> None:
    assert Fetcher.host_allowed("*.example.org", "api.example.org")
    assert not Fetcher.host_allowed("*.example.org", "example.org")
    assert not Fetcher.host_allowed("*.example.org", "evilexample.org")
    assert not Fetcher.host_allowed("example.org", "api.example.org")


def test_a_call_gets_no_more_time_than_the_run_has_left() -> None:
    log: list[dict[str, object]] = []
    config = {"hosts": ["127.0.0.1"], "timeout_s": 10, "max_bytes": 1024, "max_calls": 5}
    fetcher = Fetcher(config, time.time() - 0.1, log.append)
    answer = json.loads(fetcher.call(json.dumps(["http://127.0.0.1:9/", "GET", [], None])))
    assert answer == {"e": "fetch http://127.0.0.1:9/: the run has no time left"}
    assert (log[0]["allowed"], log[0]["outcome"]) == (True, "error: the run has no time left")


def test_host_calls_reach_the_history_and_its_json(js: Harness, server: Server) -> None:
    result = fetch_run(js, f'fetch("{base(server)}/hello"); fetch("http://nope.invalid/");')
    assert result_to_dict(result)["host_calls"][0]["outcome"] == "HTTP 200 OK, 18 bytes"
    layout = DataLayout.default()
    history = RunHistory(layout.history_path)
    record = RunRecord(
        result.run_id, "skill", js.skill_dir, "quickjs", ("main.js",), js.workspace,
        js.workspace, time.time(),
    )  # fmt: skip
    history.start(record)
    history.finish(result.run_id, result)
    cli = [sys.executable, "-m", "workbench", "history"]
    shown = subprocess.run([*cli, "show", result.run_id, "--json"], capture_output=True, check=True)
    exported = subprocess.run(
        [*cli, "export", result.run_id, "--format", "json"], capture_output=True, check=True
    )
    for output in (shown.stdout, exported.stdout):
        calls = json.loads(output)["result"]["host_calls"]
        assert [(c["target"].split()[0], c["allowed"]) for c in calls] == [
            ("GET", True),
            ("GET", False),
        ]
        assert calls[1]["outcome"] == "refused: host 'nope.invalid' is not in the fetch allow-list"
