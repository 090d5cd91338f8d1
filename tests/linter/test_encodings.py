"""Addresses in both directions, at every signed sink (issue 62), proven by running code: each case is a
small project whose tables meet a sink; it is linted, fixed with the safe fixes, and run at real
addresses and under ``simulate_high_addresses()`` before and after (the harness of test_fix_classes).

- a *wrapped* address (the int64 reading of its bits) into an unsigned container (PTR009);
- a *raw* address into an API that stores it signed: ``struct`` / ``array`` type codes, a custom op's
  ``int`` argument (PTR008);
- a dtype chosen per platform whose signed branch a platform with high addresses takes (PTR001);
and the negatives beside them: wrapped values into int64, raw values into uint64 by creation, a project
that runs only on CUDA.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .test_fix_classes import BITS, NONE, UINT64, Case, kind, project, ptrlint, run

WRAP = """

            def to_i64(p):
                return p - (1 << 64) if p >= 1 << 63 else p
"""

# a wrapped address stored into a numpy uint64 table (the wrap helper `to_i64` comes before)
INTO_A_NUMPY_UINT64 = """

            def table(ts):
                out = np.zeros(len(ts), dtype=np.uint64)
                for i, t in enumerate(ts):
                    out[i] = to_i64(t.data_ptr())
                return out


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert [int(v) for v in table(ts)] == [t.data_ptr() for t in ts]
        """

# a dtype chosen per platform: unsigned on XPU, int64 (for an int64 binding) everywhere else
PER_PLATFORM = """

            def is_xpu():
                return hasattr(torch, "xpu") and torch.xpu.is_available()


            PTR_DTYPE = torch.uint64 if is_xpu() else torch.int64
"""

# a half-migrated structure: one int64 table filled through a wrap helper, its sibling still stored raw
HALF_MIGRATED = """

            class Tables:
                def __init__(self, n):
                    self.state_addrs = torch.zeros(n, dtype=torch.int64)
                    self.slot_addrs = torch.zeros(n, dtype=torch.int64)

                def bind(self, ts):
                    for i, t in enumerate(ts):
                        self.state_addrs[i] = {helper}(t.data_ptr())
                        self.slot_addrs[i] = t.data_ptr()


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                tables = Tables(3)
                tables.bind(ts)
                want = [t.data_ptr() for t in ts]
                assert intext.gather(tables.slot_addrs) == intext.gather(tables.state_addrs) == want
        """

# a stand-in for CuPy outside the project: numpy's dtypes and conversions, a device array over a torch tensor
# whose memory pointer holds the address as CuPy declares it (`intptr_t`: negative from 2**63 on)
CUPY = {
    "cupy.py": """
        import numpy
        from numpy import int64, uint64, uintp


        class MemoryPointer:
            def __init__(self, address):
                self.ptr = address - (1 << 64) if address >= 1 << 63 else address


        class ndarray:
            def __init__(self, tensor):
                self.tensor = tensor
                self.data = MemoryPointer(tensor.data_ptr())
                self.itemsize = tensor.element_size()


        def arange(start, stop, step, dtype=None):
            size = max(0, -(-(stop - start) // step))
            first, stride = numpy.dtype(dtype).type(start), numpy.dtype(dtype).type(step)
            return numpy.array([int(first) + i * int(stride) for i in range(size)], dtype=dtype)
    """
}

# the batched pointer tables of a CuPy solver: one range of addresses from the first matrix's, by its stride
CUPY_RANGE = """
            import cupy
            import numpy as np
            import torch


            def batch_pointers(a, batch, step):
                start = a.data.ptr
                return cupy.arange(start, start + step * batch, step, dtype={dtype})


            def scenario():
                t = torch.zeros(3, 4)
                table = batch_pointers(cupy.ndarray(t), 3, 16)
                assert [int(v) % 2**64 for v in table] == [t.data_ptr() + 16 * i for i in range(3)]
        """

# a compiled module with its Cython declarations in the project (`clib.pxd`), and a stand-in for its
# extension outside it that converts each argument as Cython does (range-checked, `OverflowError`)
CLIB_PXD = """
    from libc.stdint cimport intptr_t

    cpdef generate(intptr_t generator, size_t output,
                   size_t n)
    cpdef intptr_t execute(intptr_t handle, intptr_t buf) except? 0
    cdef int internal(intptr_t x)
"""
CLIB = {
    **CUPY,
    "clib.py": """
        SIGNED, UNSIGNED = (-(1 << 63), (1 << 63) - 1), (0, (1 << 64) - 1)


        def _convert(value, bounds):
            if not bounds[0] <= value <= bounds[1]:
                raise OverflowError("value out of range for the C type")
            return value


        def generate(generator, output, n):
            _convert(generator, SIGNED)
            _convert(n, UNSIGNED)
            return _convert(output, UNSIGNED)


        def execute(handle, buf):
            _convert(handle, SIGNED)
            return _convert(buf, SIGNED) % (1 << 64)
    """,
}

IMPORT_CLIB = """
            import clib
            import torch
"""
# a raw address handed to the compiled `execute`, whose `buf` parameter is declared `intptr_t`
RUN_EXECUTE = """

            def run(handle, t):
                return clib.execute(handle, t.data_ptr())


            def scenario():
                t = torch.zeros(4)
                assert run(3, t) == t.data_ptr()
        """

CASES: dict[str, Case] = {
    "wrapped_cupy_address_into_a_declared_size_t_parameter": Case(
        files={
            "clib.pxd": CLIB_PXD,
            "app/main.py": """
            import clib
            import cupy
            import torch


            def fill(generator, a):
                return clib.generate(generator, a.data.ptr, 16)


            def scenario():
                t = torch.zeros(4)
                assert fill(7, cupy.ndarray(t)) == t.data_ptr()
        """,
        },
        fixes={("app/main.py", 7): UINT64},
        codes={("app/main.py", 7): "PTR008"},
        texts={("app/main.py", 7): "return clib.generate(generator, a.data.ptr & 0xFFFF_FFFF_FFFF_FFFF, 16)"},
        external=CLIB,
    ),
    "raw_address_into_a_declared_intptr_t_parameter": Case(
        files={
            "clib.pxd": CLIB_PXD,
            "app/main.py": IMPORT_CLIB + RUN_EXECUTE,
        },
        fixes={("app/main.py", 6): NONE},
        codes={("app/main.py", 6): "PTR008"},
        fixed_under_simulation=False,
        external=CLIB,
    ),
    "raw_address_into_a_declared_intptr_t_parameter_through_the_modules_wrap_helper": Case(
        files={
            "clib.pxd": CLIB_PXD,
            "app/main.py": IMPORT_CLIB + WRAP + RUN_EXECUTE,
        },
        fixes={("app/main.py", 10): UINT64},
        codes={("app/main.py", 10): "PTR008"},
        texts={("app/main.py", 10): "return clib.execute(handle, to_i64(t.data_ptr()))"},
        external=CLIB,
    ),
    "wrapped_cupy_address_range_into_an_unsigned_table": Case(
        files={"app/main.py": CUPY_RANGE.format(dtype="cupy.uintp")},
        fixes={("app/main.py", 8): UINT64},
        codes={("app/main.py", 8): "PTR009"},
        texts={
            ("app/main.py", 8): "return cupy.arange(start & 0xFFFF_FFFF_FFFF_FFFF, "
            "(start + step * batch) & 0xFFFF_FFFF_FFFF_FFFF, step, dtype=cupy.uintp)"
        },
        external=CUPY,
    ),
    "wrapped_cupy_address_range_into_a_signed_table": Case(
        files={"app/main.py": CUPY_RANGE.format(dtype="np.int64")},
        fixes={},
        broken_before=False,
        external=CUPY,
    ),
    "raw_address_range_into_a_numpy_int64_table": Case(
        files={
            "app/main.py": """
            import numpy as np
            import torch


            def element_pointers(t):
                base = t.data_ptr()
                step = t.stride(0) * t.element_size()
                return np.arange(base, base + step * t.shape[0], step, dtype=np.int64)


            def scenario():
                t = torch.zeros(3, 4)
                assert [int(v) % 2**64 for v in element_pointers(t)] == [t.data_ptr() + 16 * i for i in range(3)]
        """
        },
        fixes={("app/main.py", 8): UINT64},
    ),
    "wrapped_address_into_a_numpy_uint64_table": Case(
        files={
            "app/main.py": """
            import numpy as np
            import torch
"""
            + WRAP
            + INTO_A_NUMPY_UINT64
        },
        fixes={("app/main.py", 12): UINT64},
        codes={("app/main.py", 12): "PTR009"},
    ),
    "wrapped_addresses_into_a_torch_uint64_creation": Case(
        files={
            "app/main.py": """
            import torch
"""
            + WRAP
            + """

            def table(ts):
                return torch.tensor([to_i64(t.data_ptr()) for t in ts], dtype=torch.uint64)


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert table(ts).tolist() == [t.data_ptr() for t in ts]
        """
        },
        fixes={("app/main.py", 9): UINT64},
        codes={("app/main.py", 9): "PTR009"},
    ),
    "wrapped_address_stored_into_a_torch_uint64_tensor": Case(
        # torch 2.13 stores the negative value's bits (so it ran before); torch 2.14 rejects it
        # (benchmarks/torch214.py runs this case there). The fix stores a uint64 scalar tensor.
        files={
            "app/main.py": """
            import torch
"""
            + WRAP
            + """

            def table(ts):
                out = torch.zeros(len(ts), dtype=torch.uint64)
                for i, t in enumerate(ts):
                    out[i] = to_i64(t.data_ptr())
                return out


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert table(ts).tolist() == [t.data_ptr() for t in ts]
        """
        },
        fixes={("app/main.py", 11): UINT64},
        codes={("app/main.py", 11): "PTR009"},
        broken_before=False,
    ),
    "address_packed_with_a_signed_struct_code": Case(
        files={
            "app/main.py": """
            import struct

            import torch


            def descriptor(t, n):
                return struct.pack("<qi", t.data_ptr(), n)


            def scenario():
                t = torch.zeros(4)
                assert struct.unpack("<Qi", descriptor(t, 4)) == (t.data_ptr(), 4)
        """
        },
        fixes={("app/main.py", 7): UINT64},
        codes={("app/main.py", 7): "PTR008"},
    ),
    "addresses_in_a_signed_array_for_an_int64_binding": Case(
        files={
            "app/main.py": """
            import array

            import intext
            import torch


            def to_tensor(values: list[int]):
                return torch.frombuffer(array.array("q", values), dtype=torch.long)


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert intext.gather(to_tensor([t.data_ptr() for t in ts])) == [t.data_ptr() for t in ts]
        """
        },
        fixes={("app/main.py", 8): UINT64},
        codes={("app/main.py", 8): "PTR008"},
    ),
    "address_as_an_int_argument_of_a_custom_op": Case(
        files={
            "app/main.py": """
            import torch

            torch.library.define("ptrcase::offset_of", "(int base, int addr) -> int")


            @torch.library.impl("ptrcase::offset_of", "CompositeExplicitAutograd")
            def _offset_of(base, addr):
                return addr - base


            def offset(pool, t):
                return torch.ops.ptrcase.offset_of(pool.data_ptr(), t.data_ptr())


            def scenario():
                pool = torch.zeros(64)
                assert offset(pool, pool[8:]) == 32
        """
        },
        # int64 by design: wrap the arguments (no automatic fix)
        fixes={("app/main.py", 12): NONE},
        codes={("app/main.py", 12): "PTR008"},
        fixed_under_simulation=False,
    ),
    "per_platform_dtype_for_an_int64_binding": Case(
        files={
            "app/main.py": """
            import intext
            import torch
"""
            + PER_PLATFORM
            + """

            def table(ts):
                return torch.tensor([t.data_ptr() for t in ts], dtype=PTR_DTYPE)


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert intext.gather(table(ts)) == [t.data_ptr() for t in ts]
        """
        },
        # the signed branch is the one CPU and ROCm take; the fix keeps int64 for the binding
        fixes={("app/main.py", 9): UINT64},
    ),
    "raw_address_stored_into_an_int64_table_beside_a_wrapped_sibling": Case(
        # a half-migrated structure: one int64 table filled through the module's wrap helper, its sibling
        # still stored raw; the store's fix follows the module (wrap), the creation keeps int64 for the binding
        files={
            "app/main.py": """
            import intext
            import torch
"""
            + WRAP
            + HALF_MIGRATED.replace("{helper}", "to_i64")
        },
        fixes={("app/main.py", 12): BITS, ("app/main.py", 17): UINT64},
        codes={("app/main.py", 17): "PTR005"},
        texts={("app/main.py", 17): "self.slot_addrs[i] = to_i64(t.data_ptr())"},
    ),
    "raw_address_stored_into_a_uint64_table_that_has_a_numpy_view": Case(
        # torch <= 2.13 raises for a raw address >= 2**63 stored into a uint64 element; the module already
        # writes its other entries through a numpy view of the table, and the fix stores through it too
        files={
            "app/main.py": """
            import torch


            class CpuGpuBuffer:
                def __init__(self, n, dtype):
                    self.cpu = torch.zeros(n, dtype=dtype)
                    self.np = self.cpu.numpy()


            class Tables:
                def __init__(self, n):
                    self.ptrs = torch.zeros(n, dtype=torch.uint64)
                    self.ptrs_np = self.ptrs.numpy()
                    self.staged = CpuGpuBuffer(n, dtype=torch.uint64)

                def bind(self, ts):
                    self.ptrs_np[0] = ts[0].data_ptr()
                    self.staged.np[0] = ts[0].data_ptr()
                    for i, t in enumerate(ts):
                        self.ptrs[i] = t.data_ptr()
                        self.staged.cpu[i] = t.data_ptr()


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                tables = Tables(3)
                tables.bind(ts)
                want = [t.data_ptr() for t in ts]
                assert tables.ptrs.tolist() == tables.staged.cpu.tolist() == want
        """
        },
        fixes={("app/main.py", 20): UINT64, ("app/main.py", 21): UINT64},
        codes={("app/main.py", 20): "PTR005", ("app/main.py", 21): "PTR005"},
        texts={
            ("app/main.py", 20): "self.ptrs_np[i] = t.data_ptr()",
            ("app/main.py", 21): "self.staged.np[i] = t.data_ptr()",
        },
    ),
    "wrapped_address_from_another_modules_helper_into_a_numpy_uint64_table": Case(
        # the wrap helper is a project function of another module: a call of it wraps as a local one does
        files={
            "app/wrap.py": """
"""
            + WRAP,
            "app/main.py": """
            import numpy as np
            import torch

            from .wrap import to_i64
"""
            + INTO_A_NUMPY_UINT64,
        },
        fixes={("app/main.py", 10): UINT64},
        codes={("app/main.py", 10): "PTR009"},
        texts={("app/main.py", 10): "out[i] = to_i64(t.data_ptr()) & 0xFFFF_FFFF_FFFF_FFFF"},
    ),
    "raw_address_stored_beside_a_sibling_wrapped_by_the_projects_helper": Case(
        # the half-migrated structure again, its wrap helper imported from another module of the project:
        # the store's fix uses that helper, the name this module already calls it by
        files={
            "app/wrap.py": """
"""
            + WRAP,
            "app/main.py": """
            import intext
            import torch

            from .wrap import to_i64 as as_signed
"""
            + HALF_MIGRATED.replace("{helper}", "as_signed"),
        },
        fixes={("app/main.py", 10): BITS, ("app/main.py", 15): UINT64},
        codes={("app/main.py", 15): "PTR005"},
        texts={("app/main.py", 15): "self.slot_addrs[i] = as_signed(t.data_ptr())"},
    ),
    # ----- negatives ----------------------------------------------------------------------------
    "wrapped_addresses_into_an_int64_table": Case(
        files={
            "app/main.py": """
            import intext
            import numpy as np
            import torch
"""
            + WRAP
            + """

            def table(ts):
                return torch.tensor([to_i64(t.data_ptr()) for t in ts], dtype=torch.int64)


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                assert intext.gather(table(ts)) == [t.data_ptr() for t in ts]
        """
        },
        fixes={},
        broken_before=False,
    ),
    "raw_addresses_into_a_uint64_creation": Case(
        files={
            "app/main.py": """
            import numpy as np
            import torch


            def tables(ts):
                return (torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64),
                        np.array([t.data_ptr() for t in ts], dtype=np.uint64))


            def scenario():
                ts = [torch.zeros(4) for _ in range(3)]
                a, b = tables(ts)
                assert a.tolist() == b.tolist() == [t.data_ptr() for t in ts]
        """
        },
        fixes={},
        broken_before=False,
    ),
    "per_platform_pool_filled_through_numpy_aliases": Case(
        # a descriptor pool whose dtype is int64 on every platform but XPU (an int64 binding reads it), filled
        # only through numpy aliases with addresses computed in uint64: the slice store keeps each address's
        # 64 bits on every platform, so no branch can fail and nothing is reported
        files={
            "app/main.py": """
            import intext
            import numpy as np
            import torch
"""
            + PER_PLATFORM
            + """

            class Pool:
                def __init__(self, n):
                    self.src_ptrs = torch.empty(n, dtype=PTR_DTYPE)
                    self.src_np = self.src_ptrs.numpy()

                def add(self, first, addresses):
                    self.src_np[first : first + len(addresses)] = addresses


            def scenario():
                block = torch.zeros(4, 16, dtype=torch.uint8)
                base = np.uint64(block.data_ptr())
                slots = np.arange(4)
                pool = Pool(4)
                pool.add(0, base + slots.astype(np.uint64) * np.uint64(16))
                assert intext.gather(pool.src_ptrs) == [block[i].data_ptr() for i in range(4)]
        """
        },
        fixes={},
        broken_before=False,
    ),
}


# torch 2.14 rejects a negative value in a uint64 element store that 2.13 stored as bits
BROKEN_FROM_TORCH_2_14 = frozenset({"wrapped_address_stored_into_a_torch_uint64_tensor"})
# and stores a raw address >= 2**63 into a uint64 element that 2.13 rejected
BROKEN_BEFORE_TORCH_2_14 = frozenset({"raw_address_stored_into_a_uint64_table_that_has_a_numpy_view"})


def _torch_version() -> tuple[int, ...]:
    import torch

    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoding_case_runs(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    case = CASES[name]
    root = project(tmp_path, case)
    findings = json.loads(ptrlint(root, "--output-format", "json", "--exit-zero").stdout)
    got = {(f["path"], f["line"]): kind(f) for f in findings}
    assert got == case.fixes, findings
    for (path, line), code in case.codes.items():
        assert any(f["path"] == path and f["line"] == line and f["code"] == code for f in findings), findings
    before = run(root)
    assert before["real"] == "ok", before
    broken = case.broken_before and not (name in BROKEN_BEFORE_TORCH_2_14 and _torch_version() >= (2, 14))
    if broken or (name in BROKEN_FROM_TORCH_2_14 and _torch_version() >= (2, 14)):
        assert before["simulated"] != "ok", before
    ptrlint(root, "--fix", "--exit-zero")
    after = run(root)
    assert after["real"] == "ok", after
    if case.fixed_under_simulation:
        assert after["simulated"] == "ok", after
    for (path, line), text in case.texts.items():  # the fix's text, where the case names it
        assert (root / path).read_text().splitlines()[line - 1].strip() == text
    fixed = {p: p.read_text() for p in sorted(root.rglob("*.py"))}
    ptrlint(root, "--fix", "--exit-zero")
    assert {p: p.read_text() for p in sorted(root.rglob("*.py"))} == fixed  # idempotent


def test_a_project_that_runs_only_on_cuda_keeps_its_per_platform_int64(tmp_path: Path) -> None:
    case = CASES["per_platform_dtype_for_an_int64_binding"]
    root = project(tmp_path, case)
    for platforms, expected in (('["cuda"]', 0), ('["cuda", "xpu"]', 0), ('["cuda", "rocm"]', 1), ('["any"]', 1)):
        (root / "pyproject.toml").write_text(f"[project]\nname = 'app'\n[tool.ptrlint]\nplatforms = {platforms}\n")
        proc = subprocess.run(
            [sys.executable, "-m", "ptrlint", "--no-cache", "--exit-zero", "--output-format", "json", "."],
            cwd=root,
            capture_output=True,
            text=True,
        )
        findings = json.loads(proc.stdout)
        assert len(findings) == expected, (platforms, findings)
        if expected:
            assert "every platform but XPU" in findings[0]["message"] and "ROCm" in findings[0]["message"]
