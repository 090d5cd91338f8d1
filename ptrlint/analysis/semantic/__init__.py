"""The one traversal and the semantic model it builds: scopes, keys, records, types, classified calls."""
