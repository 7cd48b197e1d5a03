"""Layer 3a, presentation primitives: console cells, Markdown/HTML documents, figure helpers (matplotlib lazily).

Kinds draw and tabulate with these; they know nothing of kinds or files.
"""
