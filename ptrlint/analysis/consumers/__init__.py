"""The consumers of a pointer table: where its values go, what each use needs, and the fix that keeps them working."""
