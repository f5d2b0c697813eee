"""The worker's `fetch`: HTTP(S) to allow-listed hosts, with caps, every call logged.

Present only when the posture lists `fetch_hosts`: each call is checked against the allow-list
(exact host or `*.domain`, http or https, no redirects followed, no proxies), bounded by a per-call
timeout, a body cap and a per-run call cap, and reported as a `host_call` control message whether it
was allowed or refused. The worker imports this module before it gives up root, with everything a
call needs.
"""

import encodings.idna  # noqa: F401 - loaded now, see above
import http.client
import json
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, urlsplit

from workbench.executors.quickjs.worker import jsonwire

MAX_LOGGED_TEXT = 2000  # characters of a URL or an error kept in the log


class FetchFailed(Exception):
    """A fetch that did not produce a response; its text is the script's TypeError message."""


class Fetcher:
    """The Python side of `fetch` for one run. `call` never raises."""

    def __init__(
        self,
        config: dict[str, Any],
        deadline: float,
        report: Callable[[dict[str, Any]], None],
    ) -> None:
        self.hosts = tuple(str(host).lower().rstrip(".") for host in config["hosts"])
        self.timeout_s = float(config["timeout_s"])
        self.max_bytes = int(config["max_bytes"])
        self.max_calls = int(config["max_calls"])
        # Calls are timed from here, once the run is set up: after the run's own start, so a
        # call's time never passes the run's end.
        self.started_at = time.time()
        self.deadline = deadline
        self.report = report
        self.calls = 0

    def call(self, payload: str) -> str:
        """One fetch, JSON [url, method, [[name, value]...], body or null], answered as JSON.

        The answer is {"v": {status, statusText, url, headers, body}} or {"e": message}.
        """
        start = time.time()
        url = method = "?"
        allowed = False
        try:
            url, method, headers, body = jsonwire.from_script(payload)
            url, method = str(url), str(method).upper()
            self.calls += 1
            parts = self.check(url)
            allowed = True
            value, size = self.request(parts, method, headers, body)
            outcome = f"HTTP {value['status']} {value['statusText']}, {size} bytes"
            self.log(method, url, allowed, outcome, start)
            return json.dumps({"v": value})
        except FetchFailed as error:
            reason = str(error)
        except (OSError, ValueError) as error:
            reason = f"failed: {error}"
        except Exception as error:  # never let an exception reach the binding
            reason = f"failed: {error!r}"
        if self.calls <= self.max_calls + 1:
            self.log(method, url, allowed, reason if not allowed else f"error: {reason}", start)
        return json.dumps({"e": f"fetch {url[:MAX_LOGGED_TEXT]}: {reason}"})

    def check(self, url: str) -> SplitResult:
        """The parsed URL if the posture allows it; `FetchFailed` (a refusal) otherwise."""
        if self.calls > self.max_calls:
            cap = f"at most {self.max_calls} fetch calls"
            raise FetchFailed(f"refused: a run makes {cap} (later ones go unlogged)")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise FetchFailed("refused: only http and https URLs can be fetched")
        host = (parts.hostname or "").rstrip(".")
        if not host or not any(self.host_allowed(entry, host) for entry in self.hosts):
            raise FetchFailed(f"refused: host {host!r} is not in the fetch allow-list")
        return parts

    @staticmethod
    def host_allowed(entry: str, host: str) -> bool:
        """Whether allow-list `entry` (lower case) admits `host`."""
        if entry.startswith("*."):
            return host.endswith(entry[1:]) and len(host) > len(entry) - 1
        return host == entry

    def request(
        self, parts: SplitResult, method: str, headers: list[list[str]], body: str | None
    ) -> tuple[dict[str, Any], int]:
        """The response for JavaScript and its size in bytes; `FetchFailed` or `OSError`."""
        timeout = min(self.timeout_s, self.deadline - time.time())
        if timeout <= 0:
            raise FetchFailed("the run has no time left")
        ends = time.monotonic() + timeout
        port = parts.port  # ValueError for a bad port
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname or "", port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", port, timeout=timeout)
        data = body.encode() if body is not None else None
        if data is not None and len(data) > self.max_bytes:
            raise FetchFailed(f"the request body is larger than the {self.cap_text()} cap")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            connection.request(method, target, body=data, headers=dict(headers))
            sock = connection.sock
            response = connection.getresponse()
            received = bytearray()
            while len(received) <= self.max_bytes:
                left = ends - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                if sock is not None:
                    sock.settimeout(left)
                chunk = response.read1(64 * 1024)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            raise FetchFailed(f"timed out after {timeout:.3g} s") from None
        finally:
            connection.close()
        if len(received) > self.max_bytes:
            raise FetchFailed(f"the response is larger than the {self.cap_text()} cap")
        names: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            names[key] = f"{names[key]}, {value}" if key in names else value
        answer = {
            "status": response.status,
            "statusText": response.reason,
            "url": parts.geturl(),
            "headers": names,
            "body": received.decode("utf-8", errors="replace"),
        }
        return answer, len(received)

    def cap_text(self) -> str:
        """The body cap as text, e.g. `4 MiB`."""
        return f"{self.max_bytes / (1024 * 1024):g} MiB"

    def log(self, method: str, url: str, allowed: bool, outcome: str, start: float) -> None:
        """Report one call as a `host_call` control message."""
        self.report(
            {
                "type": "host_call",
                "api": "fetch",
                "target": f"{method} {url}"[:MAX_LOGGED_TEXT],
                "allowed": allowed,
                "outcome": outcome[:MAX_LOGGED_TEXT],
                "t": round(start - self.started_at, 6),
                "duration_s": round(time.time() - start, 6),
            }
        )
