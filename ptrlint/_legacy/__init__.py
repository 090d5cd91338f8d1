"""The libcst analysis engine, kept only while the ast engine is checked against it (differential test)."""
