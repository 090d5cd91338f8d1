"""The harm model (issue 54): a finding exists only where ptrlint can name the failure and the path to
it; a doubt is one note per object; a table that only receives bits and stays in sight is no finding.

Each case is a small project written for these tests (the classes come from reading real releases:
compile-only placeholders, tables filled by kernels or by torch arithmetic, values a binding hands
out, ctypes argument blocks). ``expect`` maps ``(path, line)`` to ``(code, severity)``; a case with no
entry there must give no finding at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CASES: dict[str, tuple[dict[str, str], dict[tuple[str, int], tuple[str, str]]]] = {
    # ----- no path to a failure: no finding -------------------------------------------------------
    "placeholder_passed_to_a_kernel_wrapper": (
        {
            "app/launch.py": """
            import torch

            def to_kernel(tensor, dtype):
                view = from_dlpack(tensor)
                view.element_type = dtype
                return view

            def run(q, compile_only):
                if compile_only:
                    desc_ptrs = torch.empty((1,), dtype=torch.int64, device=q.device)
                else:
                    desc_ptrs = cached_desc_ptrs(q.device.index)
                kernel(to_kernel(desc_ptrs, Int64))
        """
        },
        {},
    ),
    "private_placeholder_kept_alive": (
        {
            "app/plan.py": """
            import torch

            def to_kernel(tensor, dtype):
                view = from_dlpack(tensor)
                view.element_type = dtype
                return view

            class Plan:
                def prepare(self, n, device):
                    dummy_ptrs = torch.empty((n,), dtype=torch.int64, device=device)
                    self._live = (dummy_ptrs, dummy_ptrs)
                    kernel(to_kernel(dummy_ptrs, Int64))
        """
        },
        {},
    ),
    "table_filled_by_torch_arithmetic": (
        {
            "app/lora.py": """
            import torch

            def fill(w_ptr, weights, n, slot):
                base = weights.data_ptr()
                step = weights.stride(1) * weights.element_size()
                w_ptr[slot, :n] = torch.arange(n, dtype=torch.int64) * step + base

            class Lora:
                def __init__(self, weights, n):
                    self._w_ptr = torch.zeros(len(weights), n, dtype=torch.int64)
                    for slot, w in enumerate(weights):
                        fill(self._w_ptr, w, n, slot)

                def launch(self, ext):
                    ext.shrink(self._w_ptr)
        """
        },
        {},
    ),
    "values_a_binding_hands_out_go_back_to_it": (
        {
            "app/ep.py": """
            import torch
            import torch.distributed as dist

            class Buffer:
                def __init__(self, runtime, group, ranks):
                    self.runtime, self.group, self.ranks = runtime, group, ranks

                def connect(self):
                    raddr, rkey = self.runtime.get_mr_info()
                    raddr_tensor = torch.tensor([raddr], dtype=torch.int64, device="cuda")
                    peers = [torch.empty(1, dtype=torch.int64, device="cuda") for _ in range(self.ranks)]
                    dist.all_gather(peers, raddr_tensor, self.group)
                    self.runtime.sync_peers(torch.cat(peers).tolist())
        """
        },
        {},
    ),
    "ctypes_argument_block": (
        {
            "app/asm.py": """
            import ctypes

            class KernelArgs(ctypes.Structure):
                _pack_ = 1
                _fields_ = [("k_ptr", ctypes.c_int64), ("v_ptr", ctypes.c_int64), ("n", ctypes.c_int32)]

            def launch(hip, fn, k, v):
                args = KernelArgs(k_ptr=k.data_ptr(), v_ptr=v.data_ptr(), n=k.shape[0])
                hip.hipModuleLaunchKernel(fn, ctypes.byref(args))
        """
        },
        {},
    ),
    "pointers_written_through_a_ctypes_view": (
        {
            "app/pinned.py": """
            import ctypes
            import torch

            class Table:
                def __init__(self, n, ext):
                    self._pinned = torch.empty(n, dtype=torch.int64)
                    self._raw = ctypes.cast(self._pinned.data_ptr(), ctypes.POINTER(ctypes.c_int64))
                    self.ext = ext

                def run(self, mats):
                    for i, m in enumerate(mats):
                        self._raw[i] = m.data_ptr()
                    self.ext.grouped_gemm(self._pinned)
        """
        },
        {},
    ),
    # ----- a failure ptrlint can reach: an error ------------------------------------------------
    "python_ints_enter_at_creation": (
        {
            "app/table.py": """
            import torch

            def table(caches, ext):
                ext.copy(torch.tensor([c.data_ptr() for c in caches], dtype=torch.int64))
        """
        },
        {("app/table.py", 4): ("PTR001", "error")},
    ),
    "python_ints_stored_by_a_helper": (
        {
            "app/fill.py": """
            import torch

            def fill(out, tensors):
                view = out.numpy()
                for i, t in enumerate(tensors):
                    view[i] = t.data_ptr()

            def staged(tensors, ext):
                staged = torch.zeros(len(tensors), dtype=torch.int64)
                fill(staged, tensors)
                ext.launch(staged)
        """
        },
        {("app/fill.py", 9): ("PTR001", "error")},
    ),
    "device_table_read_back": (
        {
            "app/peers.py": """
            import torch

            def peers(ext, n):
                peer_ptrs = torch.empty(n, dtype=torch.int64)
                ext.fill_peer_table(peer_ptrs)
                return sorted(peer_ptrs.tolist())
        """
        },
        {("app/peers.py", 4): ("PTR001", "error")},
    ),
    "ctypes_field_read_back": (
        {
            "app/args.py": """
            import ctypes

            class Args(ctypes.Structure):
                _fields_ = [("src", ctypes.c_int64)]

            def check(t):
                args = Args(src=t.data_ptr())
                assert args.src > 0
        """
        },
        {("app/args.py", 4): ("PTR006", "error")},
    ),
    # ----- classes missed before (issue 54): address containers found through their API ------------
    "address_in_a_signed_array_module_array": (
        {
            "app/tables.py": """
            import array
            import torch

            def list_to_tensor(values: list[int], device):
                return torch.frombuffer(array.array("q", values), dtype=torch.long).to(device)

            def layer_table(caches, device):
                return list_to_tensor([c.data_ptr() for c in caches], device)
        """
        },
        {("app/tables.py", 5): ("PTR008", "error")},
    ),
    "addresses_in_a_tvm_ffi_shape": (
        {
            "app/peers.py": """
            import tvm_ffi

            def peer_shape(views):
                return tvm_ffi.Shape(tuple(int(v.data_ptr()) for v in views))
        """
        },
        {("app/peers.py", 4): ("PTR008", "error")},
    ),
    "address_as_a_custom_op_int_argument": (
        {
            "app/ops.py": """
            import torch

            torch.library.define("mine::copy_block", "(int src, int dst, int nbytes) -> ()")

            def copy_block(src, dst):
                torch.ops.mine.copy_block(src.data_ptr(), dst.data_ptr(), src.nbytes)
        """
        },
        {("app/ops.py", 6): ("PTR008", "error")},
    ),
    "data_ptr_property_read_without_a_call": (
        {
            "app/objs.py": """
            import numpy as np

            class Obj:
                def __init__(self, raw):
                    self.raw = raw

                @property
                def data_ptr(self) -> int:
                    return self.raw.data_ptr()

            def sources(objs):
                return np.array([o.data_ptr for o in objs], dtype=np.int64)
        """
        },
        {("app/objs.py", 12): ("PTR001", "error")},
    ),
    "table_parameter_typed_and_named_as_addresses": (
        {
            "app/pack.py": """
            from typing import Sequence

            import torch

            def pack_rows(kv_data_ptrs: Sequence[int], item_lens: Sequence[int], device):
                metadata = []
                for ptr, n in zip(kv_data_ptrs, item_lens):
                    metadata.extend((int(ptr), int(n)))
                return torch.tensor(metadata, dtype=torch.int64, device=device)
        """
        },
        {("app/pack.py", 9): ("PTR001", "error")},
    ),
    "factory_called_with_addresses_in_the_module": (
        {
            "app/peers.py": """
            import torch

            def peer_table(addresses, capacity):
                values = [int(a) for a in addresses]
                values += [0] * (capacity - len(values))
                return torch.tensor(values, dtype=torch.int64)

            class Peers:
                def __init__(self, buffers, ext):
                    self.table = peer_table([b.data_ptr() for b in buffers], 8)
                    ext.bind(self.table)
        """
        },
        {("app/peers.py", 6): ("PTR001", "error")},
    ),
    "table_getter_named_with_a_pointer_word_inside": (
        {
            "app/ws.py": """
            import torch

            class Workspaces:
                def __init__(self, handles, device):
                    self.peer_ptrs = {}
                    for name, handle in handles.items():
                        self.peer_ptrs[name] = torch.tensor(
                            [int(p) for p in handle.get_buffer_ptrs_host()], dtype=torch.int64, device=device
                        )
        """
        },
        {("app/ws.py", 8): ("PTR001", "error")},
    ),
    # ----- a doubt: one note per object ---------------------------------------------------------
    "tables_of_one_object_escape": (
        {
            "app/params.py": """
            import torch

            class GemmParams:
                def __init__(self, e, device):
                    self.a_ptrs = torch.empty((e,), dtype=torch.int64, device=device)
                    self.b_ptrs = torch.empty((e,), dtype=torch.int64, device=device)
                    self.out_ptrs = torch.empty((e,), dtype=torch.int64, device=device)

                def to_args(self):
                    return {"a_ptrs": self.a_ptrs, "b_ptrs": self.b_ptrs, "out_ptrs": self.out_ptrs}
        """
        },
        {("app/params.py", 5): ("PTR001", "note")},
    ),
    "signed_ctypes_object": (
        {
            "app/numa.py": """
            import ctypes

            def bind(lib, buf):
                lib.move(ctypes.c_int64(buf.data_ptr()))
        """
        },
        {("app/numa.py", 4): ("PTR006", "note")},
    ),
}


def _project(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        init = path.parent / "__init__.py"
        if not init.exists():
            init.write_text("")
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n")


def lint(root: Path) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--exit-zero", "--output-format", "json", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(CASES))
def test_harm_model(name: str, tmp_path: Path) -> None:
    files, expect = CASES[name]
    _project(tmp_path, files)
    findings = lint(tmp_path)
    got = {(f["path"], f["line"]): (f["code"], f["severity"]) for f in findings}
    assert got == expect, findings
    for finding in findings:  # every finding names its failure
        assert finding["failure"], finding


def test_notes_do_not_fail_a_run(tmp_path: Path) -> None:
    files, _ = CASES["tables_of_one_object_escape"]
    _project(tmp_path, files)
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
    assert "[note]" in proc.stdout and "1 of them is a note" in proc.stdout
    sarif = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--output-format", "sarif", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert json.loads(sarif.stdout)["runs"][0]["results"][0]["level"] == "note"
    github = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--output-format", "github", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert github.stdout.startswith("::notice ")
