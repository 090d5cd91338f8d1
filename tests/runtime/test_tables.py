"""ptrlint.runtime.tables without vLLM: one table against its reader's encoding, and patching a module on import."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch
from ptrlint.runtime import PointerBoundsError, PointerDtypeError, PointerRoundTripError, simulate_high_addresses
from ptrlint.runtime.regions import MemoryRegions

# An environment whose ptrlint.runtime is another checkout's (an editable install of another worktree, found
# before PYTHONPATH's: the package maps runtime/ by its install) may predate the module: say so, not fail.
tables = pytest.importorskip(
    "ptrlint.runtime.tables",
    reason="this environment's ptrlint.runtime is another "
    "checkout's, without runtime/tables.py (install this checkout: pip install -e .)",
)


def _sources() -> list[torch.Tensor]:
    return [torch.zeros(4, 8), torch.zeros(16, dtype=torch.int32)]


def _raw(sources: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in sources], dtype=torch.uint64)


def test_the_dtype_must_match_the_readers_encoding_at_every_level():
    sources = _sources()
    raw = _raw(sources)
    for level in ("fast", "strict"):
        with pytest.raises(
            PointerDtypeError, match=r"^T has dtype int64, but its kernel reads raw addresses in uint64"
        ):
            tables.check_table(raw.view(torch.int64), "T", None, encoding=tables.RAW, level=level)
        with pytest.raises(
            PointerDtypeError, match=r"^T has dtype uint64, but its kernel reads wrapped values in int64"
        ):
            tables.check_table(raw, "T", None, encoding=tables.WRAPPED, level=level)
    tables.check_table(raw.view(torch.int64), "T", None, encoding=tables.RAW, level="off")


def test_strict_checks_the_round_trip_and_the_regions():
    sources = _sources()
    targets = tables.targets_of(sources, "source")
    raw = _raw(sources)
    regions = MemoryRegions()
    tables.check_table(raw, "T", targets, encoding=tables.RAW, level="fast", regions=regions)  # O(1): no entries
    with pytest.raises(
        PointerBoundsError,
        match=r"entry 0 of T: source 0 \[0x[0-9a-f]+( \(real 0x[0-9a-f]+\))?, \+128\) is not inside one "
        r"registered region; no memory is registered.*REMEDY",
    ):
        tables.check_table(raw, "T", targets, encoding=tables.RAW, level="strict", regions=regions, remedy="REMEDY")
    for tensor in sources:
        regions.add(tensor)
    tables.check_table(raw, "T", targets, encoding=tables.RAW, level="strict", regions=regions)
    tables.check_table(raw.view(torch.int64), "T", targets, encoding=tables.WRAPPED, level="strict", regions=regions)
    bad = raw.clone()
    bad.view(torch.int64)[1] += 4
    with pytest.raises(
        PointerRoundTripError,
        match=r"entry 1 of T: address 0x[0-9a-f]+( \(real 0x[0-9a-f]+\))? is not the address it was "
        r"filled from \(source 1 at 0x[0-9a-f]+, 64 bytes\)",
    ):
        tables.check_table(bad, "T", targets, encoding=tables.RAW, level="strict", regions=regions)
    with pytest.raises(Exception, match=r"T must be 1-D with 2 entries"):
        tables.check_table(raw[:1], "T", targets, encoding=tables.RAW, level="fast", regions=regions)


@pytest.mark.real_addresses
def test_under_simulation_a_raw_table_is_checked_as_written_and_handed_on_real():
    sources = _sources()
    regions = MemoryRegions()
    with simulate_high_addresses():
        for tensor in sources:
            regions.add(tensor)
        table = _raw(sources)  # shifted: >= 2**63
        assert tables.host_values(table)[0] >= 1 << 63
        tables.check_table(
            table, "T", tables.targets_of(sources, "source"), encoding=tables.RAW, level="strict", regions=regions
        )
        tables.to_real_table(table)
    assert [int(v) for v in table] == [t.data_ptr() for t in sources]


def test_a_module_is_patched_now_or_when_it_is_imported(tmp_path, monkeypatch):
    (tmp_path / "ptrlint_fake_family.py").write_text(
        textwrap.dedent("""
        def build():
            return "vLLM's"
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ptrlint_fake_family", raising=False)
    seen = []

    def patch(module):
        seen.append(module.__name__)
        module.build = lambda: "patched"

    assert tables.when_imported("ptrlint_fake_family", patch) is False  # not loaded: deferred
    import ptrlint_fake_family

    assert seen == ["ptrlint_fake_family"] and ptrlint_fake_family.build() == "patched"
    assert tables.when_imported("ptrlint_fake_family", patch) is True and len(seen) == 2  # loaded: now
    del sys.modules["ptrlint_fake_family"]
