"""Benchmarks (``judgecp bench ...``): time and memory of the core's work against plain implementations."""
