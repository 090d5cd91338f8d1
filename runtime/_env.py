"""The environment switch of simulated high addresses, readable without importing torch."""

from __future__ import annotations

import os

ENV_VAR = "PTRLINT_SIMULATE_HIGH_ADDRESSES"
OFF_VALUES = ("", "0", "false", "no", "off")


def requested_value(value: str | None = None) -> str | None:
    """``$PTRLINT_SIMULATE_HIGH_ADDRESSES`` (or ``value``) normalised, or None when it asks for nothing."""
    raw = (os.environ.get(ENV_VAR, "") if value is None else value).strip().lower()
    return None if raw in OFF_VALUES else raw
