"""Synthetic judges with known behaviour, for tests, benchmarks, the embedded examples and ``judgecp example``."""

from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
    simulate_parc_records,
    simulate_prompt_judge,
    simulated_records,
)

__all__ = [
    "simulate_likert_judge",
    "simulate_mcq_records",
    "simulate_pairwise_judge",
    "simulate_parc_records",
    "simulate_prompt_judge",
    "simulated_records",
]
