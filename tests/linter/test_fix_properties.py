"""Property tests over generated modules: fixes parse, are idempotent and touch only dtype tokens."""

from __future__ import annotations

import libcst
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ptrlint.config import Config
from ptrlint.engine import Settings, analyse, fix_loop, select_codes
from ptrlint.testing import only_dtype_edits

ALL = select_codes(["ALL"], [], [])
IMPORTS = {
    "torch": ["import torch", "import torch as th", "from torch import int64, int32, tensor, zeros, empty"],
    "numpy": ["import numpy as np", "import numpy"],
}
TORCH_DTYPES = {
    "import torch": ["torch.int64", "torch.long", "torch.int32", "torch.float64", "torch.uint64"],
    "import torch as th": ["th.int64", "th.long", "th.int32", "th.uint64"],
    "from torch import int64, int32, tensor, zeros, empty": ["int64", "int32"],
}
NUMPY_DTYPES = {
    "import numpy as np": ["np.int64", "np.intp", "np.uint32", "np.uint64", "'int64'", "int"],
    "import numpy": ["numpy.int64", "numpy.longlong", "numpy.uint64"],
}
NAMES = ["src_ptrs", "dst_addrs", "table", "block_ids", "kv_indptr", "num_ptrs", "sizes", "layer_pointers", "x"]
VALUES = [
    "[t.data_ptr() for t in ts]",
    "[a.ctypes.data for a in arrays]",
    "[base + i * 64 for i in range(n)]",
    "[len(t) for t in ts]",
    "block_list",
    "[v.data_ptr() - base for v in ts]",
]
COMMENTS = ["", "  # keep", "  # noqa: PTR001", "  # ptrlint: ignore[PTR002]"]


@st.composite
def modules(draw) -> str:
    torch_import = draw(st.sampled_from(IMPORTS["torch"]))
    numpy_import = draw(st.sampled_from(IMPORTS["numpy"]))
    torch_mod = {"import torch": "torch", "import torch as th": "th"}.get(torch_import)
    numpy_mod = "np" if "as np" in numpy_import else "numpy"
    lines = [torch_import, numpy_import, "", "", "def build(ts, arrays, n, block_list):", "    base = ts[0].data_ptr()"]
    for _ in range(draw(st.integers(1, 6))):
        name = draw(st.sampled_from(NAMES))
        value = draw(st.sampled_from(VALUES))
        comment = draw(st.sampled_from(COMMENTS))
        use_numpy = draw(st.booleans())
        if use_numpy:
            dtype = draw(st.sampled_from(NUMPY_DTYPES[numpy_import] + [None]))
            call = f"{numpy_mod}.array"
        else:
            dtype = draw(st.sampled_from(TORCH_DTYPES[torch_import] + [None]))
            call = f"{torch_mod}.tensor" if torch_mod else "tensor"
        multiline = draw(st.booleans())
        args = [value] + ([f"dtype={dtype}"] if dtype else [])
        if multiline:
            inner = "".join(f"        {a},\n" for a in args)
            lines.append(f"    {name} = {call}(\n{inner}    ){comment}")
        else:
            lines.append(f"    {name} = {call}({', '.join(args)}){comment}")
        if draw(st.integers(0, 4)) == 0:
            lines.append(f"    {name}_shift = {name} + 8")
    lines.append("    return locals()")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.booleans())
@example(  # two assignments of one name, one fixed by a rename and one by an appended keyword
    "import torch\n\n\ndef build(ts):\n    dst_addrs = torch.tensor([t.data_ptr() for t in ts])\n"
    "    dst_addrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n    return locals()\n",
    False,
)
def test_fix_invariants(source, unsafe):
    cfg = Config()
    fix_settings = Settings(cfg, ALL, fix=True, unsafe_fixes=unsafe)
    findings = analyse(source, "gen.py", cfg, ALL)
    fixed, _, remaining = fix_loop(source, "gen.py", fix_settings, findings)
    libcst.parse_module(fixed)
    compile(fixed, "gen.py", "exec")
    assert only_dtype_edits(source.encode(), fixed.encode()) is None, (source, fixed)
    again, _, _ = fix_loop(fixed, "gen.py", fix_settings, analyse(fixed, "gen.py", cfg, ALL))
    assert again == fixed, "fix is not idempotent"
    assert not [f for f in remaining if f.fix is not None and f.fix.safe], "a safe fix was left unapplied"
