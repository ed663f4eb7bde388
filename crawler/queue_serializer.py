"""JSON for requests in the shared scheduler queue (scrapy-redis pickles by default).

Whoever can write to Redis could run code in every crawler through a pickle; JSON cannot.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__b64__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _encode(item) for key, item in value.items()}
        # Header names are bytes: keep such keys as they are, in a list of pairs.
        return {"__pairs__": [[_encode(key), _encode(item)] for key, item in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_encode(item) for item in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__b64__"}:
            return base64.b64decode(value["__b64__"])
        if set(value) == {"__pairs__"}:
            return {_decode(key): _decode(item) for key, item in value["__pairs__"]}
        return {key: _decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item) for item in value]
    return value


def dumps(obj: Any) -> str:
    return json.dumps(_encode(obj), separators=(",", ":"))


def loads(raw: str | bytes) -> Any:
    return _decode(json.loads(raw))
