"""ptrlint.runtime: placeholder replaced below."""
