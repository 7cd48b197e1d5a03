"""judgecp's VLMEvalKit startup hook: installed as the top-level module ``_judgecp_vlmeval_hook``.

``judgecp-vlmeval.pth`` (written into site-packages at install time, next to
this module, by the same build step as the lm-eval hook) calls
:func:`install` at interpreter start unless ``JUDGECP_VLMEVAL_AUTOLOAD`` is
``0``/``false``/``no``/``off``. It only adds an import watcher: nothing is
imported until a program imports VLMEvalKit's dataset registry, model
registry or inference module, and then judgecp registers its datasets, its
``-lp`` models, or its sidecar hook there
(:mod:`judgecp.adapters.vlmeval.discovery`). So VLMEvalKit's own ``run.py``
and ``scripts/summarize.py`` know judgecp's datasets without the launcher.
Standard library only, so every other Python program in the environment pays
nothing; any failure is a warning, never a broken VLMEvalKit. Uninstalling
judgecp removes both files.
"""

import _judgecp_startup_hook as _startup

ENV = "JUDGECP_VLMEVAL_AUTOLOAD"


class Finder(_startup.Finder):
    """Wraps the loader of VLMEvalKit's watched modules so judgecp runs right after them."""

    harness = "VLMEvalKit"
    env = ENV
    watched = (
        ("vlmeval.dataset", "after_dataset_registry"),
        ("vlmeval.config", "after_model_registry"),
        ("vlmeval.inference", "after_inference"),
    )
    discovery = "judgecp.adapters.vlmeval.discovery"
    instead = "or use `judgecp vlmeval ...`"


def enabled():
    return _startup.enabled(ENV)


def install():
    """Put the watcher first on ``sys.meta_path`` (once), unless disabled."""
    _startup.install(Finder)
