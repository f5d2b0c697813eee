"""JSON for the worker's messages, from the `_json` accelerator alone: the `json` package imports
`re`, which cost a fresh worker about a third of its start. Same output as `json.dumps` with its
defaults, same values as `json.loads` (a malformed document still raises `json`'s
`JSONDecodeError`, whose module `_json` then imports)."""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # not typing's: it imports `re` too
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _constant(name: str) -> float:
    return float(name.lower().replace("infinity", "inf"))  # NaN, Infinity, -Infinity


class _Scanning:
    """The settings `_json.make_scanner` reads: those of `json.loads` with its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)


_scan = _json.make_scanner(_Scanning())  # type: ignore[arg-type]  # any such settings do


def dumps(value: object) -> str:
    """`value` as `json.dumps(value)` writes it (a fresh encoder: its circular-reference marks
    start empty, as `json.dumps`'s do)."""
    encode = _json.make_encoder(
        {}, _refuse, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    return "".join(encode(value, 0))


def loads(text: str) -> Any:
    """The value of the JSON document `text`, as `json.loads(text)` reads it."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise _malformed("Expecting value", text, stop.value) from None
    if text[end:].strip(_WHITESPACE):
        raise _malformed("Extra data", text, end)
    return value


def from_script(text: str) -> Any:
    """The value of a JSON document a script's call sent (`loads`), every string in it well
    formed: JSON carries a JS string's lone surrogates (QuickJS escapes them, `"\\ud800"`), Python
    keeps them, and each becomes U+FFFD here, as JS's `toWellFormed` would make it."""
    return _well_formed(loads(text))


_LONE_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), "\ufffd")  # decoded pairs are one char


def _well_formed(value: Any) -> Any:
    if isinstance(value, str):
        if value.isascii():  # the usual case, and a fast test on a large string
            return value
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.translate(_LONE_SURROGATES)
        return value
    if isinstance(value, list):
        return [_well_formed(item) for item in value]
    if isinstance(value, dict):
        return {_well_formed(key): _well_formed(item) for key, item in value.items()}
    return value


def _malformed(message: str, text: str, at: int) -> ValueError:
    from json import JSONDecodeError  # only for a malformed document: it imports `re`

    return JSONDecodeError(message, text, at)
