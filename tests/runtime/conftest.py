import os

# The Triton interpreter must be chosen before the kernel module is imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

pytest.importorskip("torch")
pytest.importorskip("numpy")
