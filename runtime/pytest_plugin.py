"""pytest plugin (entry point ``pytest11``): run a test suite under simulated high addresses.

- ``pytest --ptrlint-high-addresses`` (or ini ``ptrlint_high_addresses = true``, or
  ``PTRLINT_SIMULATE_HIGH_ADDRESSES=1``) turns the mode on for the whole run;
- the ``high_addresses`` fixture turns it on for one test;
- ``@pytest.mark.real_addresses`` opts a test out (its thread reads real addresses).

Failures a simulated address caused get a note naming the simulation, the dtype and the
remedy. This module imports torch only when a run asks for the mode, so registering the
plugin costs nothing in projects that never use it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from ._env import requested_value

OPTION = "--ptrlint-high-addresses"
INI = "ptrlint_high_addresses"
MARKER = "real_addresses"
_SESSION_KEY = pytest.StashKey[ExitStack]()
_SIMULATE_MODULE = __name__.rpartition(".")[0] + ".simulate"


def _simulate() -> Any:
    try:
        from . import simulate
    except ImportError as exc:
        raise pytest.UsageError(
            f"{OPTION} and the high_addresses fixture need torch and numpy: pip install 'ptrlint[runtime]' ({exc})"
        ) from None
    return simulate


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ptrlint")
    group.addoption(
        OPTION,
        action="store_true",
        default=False,
        help="simulate device addresses >= 2**63 for the whole run: data_ptr() returns real + 2**63, so "
        "pointer tables built in a signed or narrow dtype fail here as they would on Intel XPU",
    )
    parser.addini(INI, type="bool", default=False, help=f"same as {OPTION}")


def _requested(config: pytest.Config) -> bool:
    return bool(config.getoption(OPTION) or config.getini(INI) or requested_value() is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: run this test with real addresses even when simulated high addresses are on",
    )
    if not _requested(config):
        return
    simulate = _simulate()  # with the environment variable set, importing it already turned the mode on
    stack = ExitStack()
    stack.enter_context(simulate.simulate_high_addresses(simulate.offset_from_environment() or simulate.DEFAULT_OFFSET))
    config.stash[_SESSION_KEY] = stack


def pytest_unconfigure(config: pytest.Config) -> None:
    stack = config.stash.get(_SESSION_KEY, None)
    if stack is not None:
        stack.close()
        del config.stash[_SESSION_KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    if _SESSION_KEY not in config.stash:
        return None
    from . import simulate

    return f"ptrlint: simulated high addresses on (offset {simulate.current_offset():#x})"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test marked real_addresses runs (setup, call, teardown) with real addresses in its thread."""
    simulate = _loaded_simulation()
    if item.get_closest_marker(MARKER) is None or simulate is None:
        return (yield)
    with simulate.real_addresses():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except BaseException as exc:
        simulate = _loaded_simulation()
        if simulate is not None and simulate.active():
            simulate.annotate(exc)
        raise


def _loaded_simulation() -> Any:
    """The simulate module if something already imported it (never imports torch itself)."""
    return sys.modules.get(_SIMULATE_MODULE)


@pytest.fixture
def high_addresses(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Simulated high addresses for this test; yields the ``simulate_high_addresses`` object."""
    if request.node.get_closest_marker(MARKER) is not None:
        pytest.fail(f"{request.node.nodeid} uses the high_addresses fixture but is marked {MARKER}", pytrace=False)
    simulate = _simulate()
    with simulate.simulate_high_addresses(simulate.offset_from_environment() or simulate.DEFAULT_OFFSET) as sim:
        yield sim
