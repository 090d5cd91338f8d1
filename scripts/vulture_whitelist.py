"""Names that frameworks call by name, for vulture (tests/test_dead_code.py runs it at 60 % confidence).

Each entry is here because something outside our own calls reaches it: an entry point, a protocol, a
hook or a compatibility surface. Anything else vulture reports is dead code and is removed, not listed.
"""
# ruff: noqa
# mypy: ignore-errors

from ptrlint.flake8_plugin import Flake8Plugin
from ptrlint.lsp import code_action, did_change, did_close, did_open, did_save, initialized, pull_diagnostics
from ptrlint.lsp import hover, notebook_changed, notebook_opened, notebook_saved, watched_files_changed

_ = object()

# flake8 finds its plugin through the `flake8.extension` entry point (pyproject.toml).
Flake8Plugin
# pygls dispatches LSP requests and notifications to the handlers registered with `@server.feature(...)`.
pull_diagnostics, watched_files_changed, initialized, did_open, did_save, did_change, did_close, code_action, hover
notebook_opened, notebook_changed, notebook_saved
# libcst: transformers' visit_/leave_ methods and their parameters, and the metadata a visitor declares.
_.visit_IndentedBlock
_.leave_IndentedBlock
original_node
METADATA_DEPENDENCIES
# PEP 562: a package's module-level __getattr__ and __dir__ (runtime/__init__.py loads torch lazily).
__getattr__
__dir__
# pytest: the plugin's hooks (the `pytest11` entry point), their parameters, fixtures used by name, markers.
pytest_addoption, pytest_configure, pytest_unconfigure, pytest_report_header, pytest_runtest_protocol
pytest_runtest_call, nextitem, high_addresses, _mode_off_around_each_test, pytestmark
# The context-manager protocol: __exit__'s parameters.
exc_type
# vLLM compatibility: the attributes and methods vLLM reads on objects we hand it (runtime/buffers.py,
# runtime/mamba.py, the integration scenario's stand-ins), and the original a patch keeps for unpatching.
_.copy_to_cpu
page_size_padded, mamba_cache_mode, num_speculative_blocks, kv_cache_tensors, MambaStateCopyFunc
_.PIN_MEMORY
_.get_state_shape
_.get_state_dtype
# vLLM's buffer_utils.is_uva_available, replaced by the 0.34 scenario and benchmark (vLLM reads it).
_.is_uva_available
state_alignment, use_flashinfer_replayssm  # read by vLLM 0.34's MambaBase.bind_kv_cache and state walk
_.kv_cache_layout  # vLLM 0.34's resolved layout, read by init_kv_cache
# tests/linter/test_gcpause.py: an object in a reference cycle of its own (the attribute is the cycle).
_.me
