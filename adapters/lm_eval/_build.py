"""Build step: ship the lm-eval and VLMEvalKit startup hooks into site-packages (setuptools ``build_py``).

A ``.pth`` file works only at the top of site-packages, and ``data_files``
cannot put it there portably; so ``build_py`` writes ``judgecp-lm-eval.pth``
and the hook module ``_judgecp_lm_eval_hook.py`` (and the same pair for
VLMEvalKit, ``judgecp-vlmeval.pth`` and ``_judgecp_vlmeval_hook.py``, from
``adapters/vlmeval/_startup_hook.py``; for lmms-eval, ``judgecp-lmms-eval.pth`` and
``_judgecp_lmms_eval_hook.py`` from ``adapters/lmms_eval/_startup_hook.py``; the watcher they share,
``_judgecp_startup_hook.py`` from ``adapters/_startup_hook.py``) at the root of what becomes
the wheel. In an editable install setuptools ships only the unpacked wheel
directory (its ``install_lib``), so the files go there instead. Either way
they are listed in the wheel's RECORD: ``pip uninstall judgecp`` removes them.

Loaded by setuptools from ``pyproject.toml`` (``[tool.setuptools.cmdclass]``)
as a standalone file: standard library and setuptools only.
"""

from __future__ import annotations

from pathlib import Path

from setuptools.command.build_py import build_py as _build_py

HOOK_MODULE = "_judgecp_lm_eval_hook"
PTH_FILE = "judgecp-lm-eval.pth"
HOOK_SOURCE = Path(__file__).with_name("_startup_hook.py")
PTH_LINE = (
    "import os; os.environ.get('JUDGECP_LM_EVAL_AUTOLOAD', '1').strip().lower() in "
    f"('0', 'false', 'no', 'off') or __import__('{HOOK_MODULE}').install()\n"
)
VLMEVAL_HOOK_MODULE = "_judgecp_vlmeval_hook"
LMMS_EVAL_HOOK_MODULE = "_judgecp_lmms_eval_hook"
#: The watcher the three hooks share (no .pth of its own).
SHARED_HOOK = ("_judgecp_startup_hook", None, Path(__file__).parents[1] / "_startup_hook.py", None)
#: (hook module, .pth file, source, .pth line) of every startup hook
HOOKS = (
    SHARED_HOOK,
    (HOOK_MODULE, PTH_FILE, HOOK_SOURCE, PTH_LINE),
    (VLMEVAL_HOOK_MODULE, "judgecp-vlmeval.pth", Path(__file__).parents[1] / "vlmeval" / "_startup_hook.py",
     "import os; os.environ.get('JUDGECP_VLMEVAL_AUTOLOAD', '1').strip().lower() in "
     f"('0', 'false', 'no', 'off') or __import__('{VLMEVAL_HOOK_MODULE}').install()\n"),
    (LMMS_EVAL_HOOK_MODULE, "judgecp-lmms-eval.pth", Path(__file__).parents[1] / "lmms_eval" / "_startup_hook.py",
     "import os; os.environ.get('JUDGECP_LMMS_EVAL_AUTOLOAD', '1').strip().lower() in "
     f"('0', 'false', 'no', 'off') or __import__('{LMMS_EVAL_HOOK_MODULE}').install()\n"),
)


class build_py(_build_py):
    """``build_py`` that also writes the startup hook and its ``.pth`` file."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib)
        if getattr(self, "editable_mode", False):
            target = Path(self.get_finalized_command("install").install_lib)
        self._hook_files = write_hook(target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:  # type: ignore[override]
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [str(Path(self.build_lib) / name) for module, pth, _, _ in HOOKS
                        for name in (f"{module}.py", pth) if name is not None]
        return outputs


def write_hook(target: Path) -> list[str]:
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, pth_file, source, line in HOOKS:
        module = target / f"{name}.py"
        module.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        written.append(str(module))
        if pth_file is not None:
            pth = target / pth_file
            pth.write_text(line, encoding="utf-8")
            written.append(str(pth))
    return written
