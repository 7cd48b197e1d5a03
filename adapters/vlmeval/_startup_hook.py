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

import _judgecp_startup_hook

ENV = _judgecp_startup_hook.HARNESSES["vlmeval"][1]
Finder, enabled, install = _judgecp_startup_hook.harness_hook("vlmeval", __name__)
