"""judgecp's lm-eval startup hook: installed as the top-level module ``_judgecp_lm_eval_hook``.

``judgecp-lm-eval.pth`` (written into site-packages at install time, next to
this module) calls :func:`install` at interpreter start unless
``JUDGECP_LM_EVAL_AUTOLOAD`` is ``0``/``false``/``no``/``off``. It only adds
an import watcher: nothing is imported until a program imports lm-eval's
model registry or task manager, and then judgecp registers its models
(after lm-eval's built-ins) and its task folder. The watcher itself is
``_judgecp_startup_hook`` (``adapters/_startup_hook.py``), shared by the three harnesses.
"""

import _judgecp_startup_hook

ENV = _judgecp_startup_hook.HARNESSES["lm_eval"][1]
Finder, enabled, install = _judgecp_startup_hook.harness_hook("lm_eval", __name__)
