"""The evidence model on CPython's ast: source positions, scopes, facts (one traversal), queries."""
