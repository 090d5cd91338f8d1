"""``python -m ptrlint``: the command line."""

from .cli import console

console()
