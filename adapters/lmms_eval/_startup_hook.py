"""judgecp's lmms-eval startup hook: installed as the top-level module ``_judgecp_lmms_eval_hook``.

``judgecp-lmms-eval.pth`` (written into site-packages at install time, next to
this module, by ``judgecp.adapters.lm_eval._build``) calls :func:`install` at
interpreter start unless ``JUDGECP_LMMS_EVAL_AUTOLOAD`` is
``0``/``false``/``no``/``off``. It only adds an import watcher: nothing is
imported until a program imports lmms-eval's task package, and then judgecp
adds its task folder to every ``TaskManager`` (judgecp's models come from the
``lmms_eval.models`` entry points, no hook needed). Standard library only;
any failure is a warning, never a broken lmms-eval.
"""

import _judgecp_startup_hook

ENV = _judgecp_startup_hook.HARNESSES["lmms_eval"][1]
Finder, enabled, install = _judgecp_startup_hook.harness_hook("lmms_eval", __name__)
