"""The rewrite engine (libcst): fix intents -> edits -> new text, written without losing work."""
