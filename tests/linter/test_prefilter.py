"""The text prefilter is sound: with and without it, findings are identical."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ptrlint.config import Config
from ptrlint.engine import Settings, process_text, select_codes
from ptrlint.lexer import ProseMap
from ptrlint.prefilter import prefilter

from ..conftest import CORPUS, REPO

ALL = select_codes(["ALL"], [], [])
NO_EVIDENCE = "import torch\nblock_ids = torch.tensor(ids, dtype=torch.int64)\nlengths = [len(x) for x in xs]\n"


def _own_files() -> list[Path]:
    """The repository's own Python: examples, fixtures, the linter and runtime sources, the tests."""
    files = [p for folder in ("examples", "tests", "ptrlint", "runtime") for p in (REPO / folder).rglob("*.py")]
    return sorted(files + list((REPO / "benchmarks").glob("*.py")))  # not benchmarks/.cache (downloaded trees)


def _torch_sample() -> list[Path]:
    spec = importlib.util.find_spec("torch")  # installed by the README's test command; never imported here
    if spec is None or not spec.submodule_search_locations:
        return []
    tree = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))
    # a fixed, spread-out sample of small and mid-size files keeps this fast
    return [p for p in tree if p.stat().st_size < 60_000][::15]


def _findings(text: str, prefilter_on: bool) -> list[tuple]:
    settings = Settings(Config(), ALL, prefilter=prefilter_on)
    result = process_text(text, "f.py", settings)
    return [(f.line, f.column, f.code) for f in result.findings]


@pytest.mark.slow
def test_prefilter_changes_no_finding_over_real_trees():
    own = _own_files()
    files = own + _torch_sample()
    if (CORPUS / "cases").is_dir():
        files.extend(sorted((CORPUS / "cases").glob("*.py")))
    texts = [NO_EVIDENCE]
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    assert len(texts) > len(own)  # every own file was readable, plus the generated one
    skipped = flagged = 0
    for text in texts:
        with_filter = _findings(text, True)
        assert with_filter == _findings(text, False)
        skipped += not prefilter(text, Config())
        flagged += bool(with_filter)
    assert not prefilter(NO_EVIDENCE, Config())
    assert skipped > 0 and flagged > 0  # the filter does skip work, and the sample does hold findings


PROSE_ONLY = [
    # evidence only in a comment, a docstring or a C++ source held as a string: no finding can follow
    "import torch\n# copies every data_ptr() into the table\nblock_ids = torch.tensor(ids, dtype=torch.int64)\n",
    'import torch\n\n\ndef f(ids):\n    """Build the table.\n\n    Not the ptrs table.\n    """\n'
    "    return torch.tensor(ids, dtype=torch.int64)\n",
    'import torch\nSRC = r"""\n__global__ void k(int64_t* ptrs) {}\n"""\nt = torch.zeros(4, dtype=torch.int64)\n',
    # a site only in a comment or a docstring: nowhere to report a finding
    "ptrs = [x.data_ptr() for x in xs]  # later: torch.tensor(ptrs, dtype=torch.int64)\n",
    'def table(xs):\n    """Returns what `torch.tensor(ptrs, dtype=torch.int64)` would hold.\n\n    Lists.\n    """\n'
    "    return [x.data_ptr() for x in xs]\n",
]


@pytest.mark.parametrize("source", PROSE_ONLY)
def test_evidence_in_comments_and_prose_strings_is_no_evidence(source):
    assert not prefilter(source, Config())
    assert _findings(source, False) == []


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nsrc_ptrs = d['src_ptrs']  # a key\nt = torch.tensor(src_ptrs, dtype=torch.int64)\n",
        'import torch\nt = torch.tensor([x.data_ptr() for x in xs], dtype=torch.int64)  # """\n',
        "import torch\nSRC_PTRS_ = torch.empty(4, dtype=torch.int64)\n",
        "import torch\nself_addresses = torch.empty(4, dtype=torch.int64)\n",
        "import numpy as np\nimport ctypes as C\nt = np.array([C.addressof(x) for x in xs], dtype=np.int64)\n",
        "import numpy as np\nt = np.array([a.__array_interface__['data'][0] for a in xs], dtype=np.int64)\n",
    ],
)
def test_prefilter_keeps_every_evidence_kind(source):
    assert _findings(source, True) == _findings(source, False) != []


def _whole_text_evidence(text: str, config: Config) -> bool:
    """The definition the windowed search must equal: the regex over the whole lowered text, each
    match where it stands as evidence."""
    from ptrlint.prefilter import _prefilter_parts

    evidence, _sites = _prefilter_parts(config)
    lowered = text.lower()
    prose = ProseMap(lowered)
    if any(evidence.counts(lowered, m.start(), prose) for m in evidence.regex.finditer(lowered)):
        return True
    # the constants of a wrap into int64 range, in code: a module that may define a wrap helper
    if any(not prose.is_prose(m.start()) for m in re.finditer(r"(?<!\w)(?:1[ \t]*<<|2[ \t]*\*\*)\s*6[34]\b", text)):
        return True
    return any(p.fullmatch(ident.strip("_")) for ident in re.findall(r"[A-Za-z_]\w*", text) for p in evidence.custom)


EDGE_TEXTS = [
    "x = 1\n",
    "def f(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n",
    "x = 2**64",
    "x = 2 ** 63 - 1",
    "x = 11 << 64",
    "x = 1 << 640",
    "x = 1 <<\n 64",
    "# 1 << 64\n",
    "s = '1 << 63'\n",
    "1<<63",
    "a2**64",
    "ptr",
    "xptr",
    "ptrx",
    "_ptr_",
    "a.ptrs",
    "devptrs_",
    "addresses",
    "ipaddress",
    "ipaddresses_x",
    "caddr",
    "hptr",
    "y" * 40 + "ptr",
    "ptr" + "y" * 40,
    "xx_address_" + " " * 30,
    "ctypesx",
    "CUDA_ARRAY_INTERFACE",
    "nvshmem_ptr(x)",
    "ADDR",
    "p0interp",
    "s = 'pointer'",
    "mypointers",
    "pointers_table",
    'for k in ("ptrlint_cold", "ptrlint_warm")',  # a window's end cuts the second `ptrlint` to `ptr`
    "# the ptr table\nx = 1\n",
    '"""\nholds ptrs\n"""\nptr = 1\n',
    '"""\nholds ptrs\n"""\nx = 1\n',
    "s = 'ptr'  # key\n",
    "x = d['src_ptrs']\n",
    "h.getdevicepointer(x)",
    "cuMemAddressReserve(n)",
    "m.memalloc(4)",
    "arr.device_ctypes_pointer.value",
    "# getdevicepointer\nx = 1\n",
    "# x = d['src_ptrs']\n",
    'f"""\n{ptrs}\n"""\n',
    'x = f"{d["a"]}"  # ptr\n',
]


@pytest.mark.parametrize("pointer_functions", [(), ("mylib.resolve_handle_location",)])
def test_windowed_evidence_search_equals_the_whole_text_search(pointer_functions):
    from ptrlint.prefilter import has_evidence

    config = Config(pointer_functions=pointer_functions)
    texts = list(EDGE_TEXTS) + ["q = resolve_handle_location(x)", "resolve_handle_locations"]
    for path in _own_files()[::3] + _torch_sample()[::2]:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    answers = [has_evidence(t, config) for t in texts]
    assert answers == [_whole_text_evidence(t, config) for t in texts]
    assert any(answers) and not all(answers)


SITE_EDGE_TEXTS = [
    "",
    "x = 1\n",
    "tensor",
    "tensors",
    "xtensor",
    "_tensor",
    "torch.tensor(",
    "a.to(b)",
    "a . to",
    "a.\\\n  long()",
    "a.  # c\n  int()",
    "a.totally",
    "x.int64",
    "int_",
    "int__",
    "np.intp(x)",
    "# torch.zeros(4)\nx = 1\n",
    '"""\ntorch.zeros(4)\n"""\nx = 1\n',
    '"""\ntorch.zeros(4)\n"""\nt = torch.zeros(4)\n',
    "s = 'x.to(y)'\n",
    "élan_tensor",
    "tensor_é",
    "é.to(x)",
    "x = make_buffer(4)",
    "CpuGpuBuffer",
    "ctypes.c_int64",
    "Tensor",
    "new_zeros",
    "x_new_zeros",
    "zeros_like_x",
    "np.ascontiguousarray(a)",
    "a.new_tensor(b)",
    "tensors_like",
    " " * 4090 + "new_zeros(3)",
    " " * 4094 + "as_tensor(x)",
    " " * 4093 + "x_new_zeros" + " " * 9000 + "zeros_like",
    "z" * 5000 + " tensor",
    " " * 4093 + "tensor",
    "a\n" * 2046 + "x.to(y)",
    "# " + "x" * 5000 + "\nzeros",
    "\n".join(["# comment .to zeros"] * 2000) + "\nx.long()",
]


def site_regex(factories: tuple[str, ...] = ()) -> re.Pattern[str]:
    """The definition of a site (ptrlint.prefilter.prefilter): a site word or a cast method after a dot."""
    from ptrlint.catalog import site_methods, site_words

    words = "|".join(re.escape(w) for w in (*site_words(), *factories) if w)
    methods = "|".join(site_methods())
    # `#[^\n]*\n`: a comment runs to its line end, so the repetition cannot backtrack (`x.  ####`)
    return re.compile(rf"\b(?:{words})\b|\.(?:\s|\\|#[^\n]*\n)*(?:{methods})\b")


@pytest.mark.parametrize("factories", [(), ("my.alloc_table", "weird-name")])
def test_site_search_equals_the_site_regex(factories):
    """The word-by-word site search answers what the site regex over the whole text answers."""
    from ptrlint.prefilter import _Prose, _Sites

    definition = site_regex(tuple(f.rpartition(".")[2] for f in factories))
    sites = _Sites(tuple(f.rpartition(".")[2] for f in factories))
    texts = list(SITE_EDGE_TEXTS) + ["t = alloc_table(4)", "x = weird-name(1)", "weird-names"]
    for path in _own_files()[::2] + _torch_sample():
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    for text in texts:
        prose = ProseMap(text)
        expected = any(not prose.is_prose(m.start()) for m in definition.finditer(text))
        assert sites.search(text, _Prose(text)) == expected, text[:200]
    assert any(sites.search(t, _Prose(t)) for t in texts) and not all(sites.search(t, _Prose(t)) for t in texts)


# A pointer word counts as evidence only where the analysis can read a name as evidence: a creation's
# target, key or field, a called getter, a table name anywhere (analysis/options.py and its callers).
WORDS_THAT_NAME_NOTHING = [
    "import torch\ndef sample_inputs_addr(x):\n    return torch.tensor(x, dtype=torch.int64)\n",  # a definition
    "import torch\nclass Addr:\n    pass\nt = torch.tensor(ids, dtype=torch.int64)\n",
    "import torch\nt = torch.tensor(ids, dtype=torch.int64)\nop = torch.addr\n",  # an attribute read
    "import torch\nops = ['addr', 'mm']\nt = torch.tensor(ids, dtype=torch.int64)\n",  # a string, not a key
    "import torch\nfrom m import x_ptr\nt = torch.tensor([x_ptr], dtype=torch.int64)\n",  # an import, a value
    "import torch\ndef f(x_ptr):\n    return torch.tensor([x_ptr, x_ptr + 8], dtype=torch.int64)\n",
    "import torch\nt = torch.tensor(ids, dtype=torch.int64)\nprint(f'{base_addr}')\n",
    "import torch\ndef f(a, x_ptr):\n    t = torch.tensor(a, dtype=torch.int64)\n    return x_ptr.shape, t\n",
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\ng(t, kw=sample_addr)\n",
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\nif a == x_ptr and b:\n    pass\n",
    "import torch\nmaster_addr = torch.zeros(4, dtype=torch.int64)\n",  # a look-alike
    "import torch\nx_ptr = None\nt = torch.zeros(4, dtype=torch.int64)\nf(t, use_block_ptr=False)\n",  # constants
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\nif self.x_ptr:\n    pass\n",  # a condition
    "import torch\ndef f(t, x_ptr: int):\n    return torch.zeros(4, dtype=torch.int64)\n",  # a parameter's type
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\nd = {x_ptr: 1, 'a': s[x_ptr:]}\n",  # a key's value, a slice
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\nok = hasattr(t, '__cuda_array_interface__')\n",  # strings
    "import torch\nt = torch.tensor(ids, dtype=torch.int64)\ncode = 'x.data_ptr()'\nd = {'ptrs ': t, 'a': 'a_ptr'}\n",
    "import torch\nt = torch.zeros(4, dtype=torch.int64)\nops = {\n    torch.Tensor.addr: [1],\n    x_ptr: 2,\n}\n",  # keys
    "import torch\ndef f(\n    t,\n    x_ptr: int,\n):\n    return torch.zeros(4, dtype=torch.int64)\n",  # a parameter's type
]
WORDS_THAT_NAME_A_CREATION_OR_A_GETTER = [
    'import torch\ns = \'(\' + f\'[{a}\' + """{\n"""  # (\nclass A:\n    x_ptr: int\nt = torch.tensor([A(1).x_ptr], dtype=torch.int64)\n',
    "import torch\nx_ptr = torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nx_ptr: torch.Tensor = torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nx_ptr = None if a else torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nclass A:\n    def __init__(self):\n        self.x_ptr: torch.Tensor = torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nif (x_ptr := torch.zeros(4, dtype=torch.int64)) is not None:\n    pass\n",
    "import torch\nclass A:\n    def __init__(self):\n        self.x_ptr = torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nt = torch.tensor([get_addr(b) for b in bs], dtype=torch.int64)\n",
    "import torch\nt = torch.tensor([get_addr (b) for b in bs], dtype=torch.int64)\n",
    "import torch\nd = {'src_ptr': torch.zeros(4, dtype=torch.int64)}\n",
    'import torch\nd = {"""src_ptr""" : torch.zeros(4, dtype=torch.int64)}\n',
    "import torch\nt = torch.tensor([f'{x.data_ptr()}'], dtype=torch.int64)\n",  # an f-string's fields are code
    "import torch\nd = {}\nd['src_ptr'] = torch.zeros(4, dtype=torch.int64)\n",
    "import torch\nf(src_ptr=torch.zeros(4, dtype=torch.int64))\n",
    "import torch\nf(src_ptr = torch.zeros(4, dtype=torch.int64))\n",
    (
        "import torch\nfrom dataclasses import dataclass\n@dataclass\nclass B:\n    src_ptr: torch.Tensor\n"
        "b = B(torch.zeros(4, dtype=torch.int64))\n"
    ),
    "import torch\nt = torch.tensor(src_ptrs, dtype=torch.int64)\n",  # a table name, anywhere
    "import torch\nimport cupy\nt = torch.tensor([m.ptr for m in mems], dtype=torch.int64)\n",  # an address attribute
    "import torch\nt = torch.tensor([h.multicast_ptr], dtype=torch.int64)\n",
]


@pytest.mark.parametrize("source", WORDS_THAT_NAME_NOTHING)
def test_a_pointer_word_that_names_nothing_is_no_evidence(source):
    from ptrlint.prefilter import has_evidence

    assert not has_evidence(source, Config())
    assert _findings(source, False) == []  # the analysis agrees: nothing to find


@pytest.mark.parametrize("source", WORDS_THAT_NAME_A_CREATION_OR_A_GETTER)
def test_a_pointer_word_that_names_a_creation_or_a_getter_is_evidence(source):
    from ptrlint.prefilter import has_evidence

    assert has_evidence(source, Config())
    assert _findings(source, True) == _findings(source, False)


@pytest.mark.parametrize(
    "codes, expected",
    [
        (None, True),  # every rule: the creation is a site
        (frozenset({"PTR001"}), True),
        (frozenset({"PTR006"}), False),  # ctypes only: no `ctypes` in the text, so no site of that rule
        (frozenset({"PTR006", "PTR002"}), True),
    ],
)
def test_the_sites_are_those_of_the_selected_rules(codes, expected):
    """Each rule declares the words its sites leave (ptrlint/catalog.py gathers them); a run with some
    rules selected skips a file that holds none of theirs."""
    from ptrlint.config import Config
    from ptrlint.prefilter import prefilter

    text = "import torch\nptrs = torch.zeros(4, dtype=torch.int64)\nptrs[0] = t.data_ptr()\n"
    assert prefilter(text, Config(), codes) is expected
