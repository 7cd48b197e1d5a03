"""Layer 2, numbers: conformal methods, selective risk, PPI and its designs, sequential tests, diagnostics.

numpy, scipy and scikit-learn only: no files, no judge kinds, no registry lookups. Imports only
:mod:`judgecp.base`.
"""
