"""Reading a judge's score-token and answer-letter logprobs from a model's raw outputs (the torch extra).

Both harnesses' capturing models use it; it imports no harness, and torch and
transformers only when a model's outputs are read.

* :mod:`judgecp.adapters.capture.logits`: models that compute the logits themselves
  (lm-eval's ``hf-judge`` / ``hf-multimodal-judge``): one-pass direct scoring
  of a document's labels, rating-token logprobs during ``generate``, and the
  top-k outputs of vLLM and OpenAI-compatible APIs, as ``score`` judge outputs.
* :mod:`judgecp.adapters.capture.generate`: a model's own ``generate`` call, captured
  by patching ``transformers`` (VLMEvalKit's ``-lp`` models), read into
  ``score``, ``pair`` and ``choice`` judge outputs; the same outputs from
  top-K lists for VLMEvalKit's OpenAI-compatible API judge.

The score and letter extraction itself is :mod:`judgecp.data.extraction`.
"""
