"""ptrlint: find memory addresses stored in signed, narrow or implicit-dtype tensors.

Importing this package is cheap and never imports torch, numpy or libcst.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
