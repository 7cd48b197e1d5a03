"""Prompt-ensemble inputs: records per (item, prompt), prompt sets, item sources and image embeddings."""
