"""Layer 1, foundations: errors, files and atomic outputs, the rating scale, progress, threads, the record schema.

Imports nothing of judgecp's above it (checked by import-linter, ``make lint``).
"""
