"""AI engines behind one interface (``base``): the offline engine, the Gemini Live adapter and
the line-check tone."""

from __future__ import annotations

import os
from collections.abc import Mapping

from switchboard.mediabridge.engines.base import Engine

ENGINES = ("offline", "gemini", "tone")


def create_engine(name: str, environ: Mapping[str, str] | None = None) -> Engine:
    """The engine ``name`` for one bridge process (``--engine``). The Gemini adapter is imported
    only when chosen, and reads where to connect from the environment
    (``GeminiEndpoint.from_env``)."""
    if name == "offline":
        from switchboard.mediabridge.engines.offline import OfflineEngine

        return OfflineEngine()
    if name == "tone":
        from switchboard.mediabridge.engines.tone import ToneEngine

        return ToneEngine()
    if name == "gemini":
        from switchboard.mediabridge.engines.gemini import GeminiEndpoint, GeminiEngine

        return GeminiEngine(
            endpoint=GeminiEndpoint.from_env(os.environ if environ is None else environ)
        )
    raise ValueError(f"unknown engine {name!r}: one of {', '.join(ENGINES)}")
