#!/usr/bin/env bash
# A CPU-only VLMEvalKit environment with judgecp in it (docs/vlmeval.md, "Install").
#
#   bash scripts/install_vlmeval_cpu.sh VLMEVALKIT_DIR VENV_DIR [JUDGECP_DIR]
#
#   VLMEVALKIT_DIR  a VLMEvalKit checkout (VLMEvalKit is not on PyPI; checked: e8e78f05)
#   VENV_DIR        the virtual environment to create (reused when it exists)
#   JUDGECP_DIR     the judgecp checkout to install editable (default: the one
#                   this script lives in)
#
# Why not `pip install -e VLMEvalKit`: its requirements pull CUDA torch, triton,
# the nvidia-* packages, torchvision and litellm into a CPU environment. So:
# CPU torch first, VLMEvalKit with --no-deps, then the packages that
# `import vlmeval.config, vlmeval.dataset, vlmeval.inference` and run.py need,
# under constraints (VENV_DIR-constraints.txt, written beside the venv), and a
# torchvision stand-in (PyPI's torchvision does not work with the CPU torch
# wheel, while `import vlmeval` imports torchvision). Safe to re-run.
#
# Environment: PYTHON (default python3) creates the venv; TORCH_INDEX_URL, when
# set, is passed to the torch install as --index-url.
set -euo pipefail

usage() {
    sed -n '4,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 2 && $# -le 3 ]] || usage

abspath() { (cd "$1" && pwd -P); }

[[ -d "$1" ]] || { echo "install_vlmeval_cpu.sh: VLMEvalKit checkout not found: $1" >&2; exit 2; }
VLMEVAL_DIR=$(abspath "$1")
[[ -f "$VLMEVAL_DIR/vlmeval/__init__.py" && -f "$VLMEVAL_DIR/run.py" ]] || {
    echo "install_vlmeval_cpu.sh: $VLMEVAL_DIR is not a VLMEvalKit checkout (no vlmeval/__init__.py or run.py)" >&2
    exit 2
}

JUDGECP_DIR=${3:-$(dirname "${BASH_SOURCE[0]}")/..}
[[ -d "$JUDGECP_DIR" ]] || { echo "install_vlmeval_cpu.sh: judgecp checkout not found: $JUDGECP_DIR" >&2; exit 2; }
JUDGECP_DIR=$(abspath "$JUDGECP_DIR")
grep -q '^name = "judgecp"' "$JUDGECP_DIR/pyproject.toml" 2>/dev/null || {
    echo "install_vlmeval_cpu.sh: $JUDGECP_DIR is not a judgecp checkout (no pyproject.toml naming judgecp)" >&2
    exit 2
}

VENV=$2
if [[ -e "$VENV" && ! -x "$VENV/bin/python" ]]; then
    echo "install_vlmeval_cpu.sh: $VENV exists and is not a virtual environment" >&2
    exit 2
fi
mkdir -p "$(dirname "$VENV")"
VENV=$(abspath "$(dirname "$VENV")")/$(basename "$VENV")
PY=$VENV/bin/python
CONSTRAINTS=$VENV-constraints.txt

step() { printf '\n==> %s\n' "$*"; }

# After VLMEvalKit is installed without its requirements, every later pip install ends with its
# resolver's ERROR block listing them ("vlmeval 0.1.0 requires torchvision, which is not
# installed.", ~28 lines each time): left out on purpose, so folded into one line here. Any other
# conflict pip reports is shown as pip wrote it, with the ERROR line before it.
fold_vlmeval_requirements() {
    awk '
        function note() {
            if (n) printf "(pip listed %d requirements of VLMEvalKit that this script leaves " \
                          "out on purpose: harmless, docs/vlmeval.md \"Expected noise\")\n", n
            n = 0
        }
        /^ERROR: pip.s dependency resolver does not currently take into account/ { held = $0; next }
        /^vlmeval [^ ]+ requires .+, which is not installed\.$/ { n++; next }
        {
            if (held != "" && $0 ~ / requires | has requirement /) print held
            held = ""
            note()
            print
            fflush()
        }
        END { if (held != "") print held; note() }
    '
}

step "virtual environment $VENV"
if [[ -x "$PY" ]]; then
    echo "exists, reused"
else
    "${PYTHON:-python3}" -m venv "$VENV"
fi

# CPU torch before anything can depend on it: here `pip install torch==2.13.0`
# takes the machine's local CPU wheel. On other machines PyPI's Linux wheel is
# the CUDA build; the CPU index gives the same CPU wheel:
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/install_vlmeval_cpu.sh ...
# (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu).
step "CPU torch 2.13.0"
"$PY" -m pip install torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}

# torch stays the CPU build; transformers 5 removes AutoModelForVision2Seq,
# which VLMEvalKit's DOCLING (and others) use; transformers 4.57 needs
# huggingface-hub < 1.0.
step "constraints $CONSTRAINTS"
printf 'torch==2.13.0\nhuggingface-hub<1.0\ntransformers<5\n' > "$CONSTRAINTS"
cat "$CONSTRAINTS"

PIP=("$PY" -m pip install -c "$CONSTRAINTS")

step "VLMEvalKit (editable, without its requirements) from $VLMEVAL_DIR"
# judgecp is checked against e8e78f05; another commit may work, and is said
CHECKED=e8e78f05
if commit=$(git -C "$VLMEVAL_DIR" rev-parse HEAD 2>/dev/null); then
    if [[ $commit == $CHECKED* ]]; then
        echo "VLMEvalKit commit ${commit:0:8} (the one judgecp is checked against)"
    else
        echo "note: VLMEvalKit commit ${commit:0:8}; judgecp is checked against $CHECKED" \
             "(git -C $VLMEVAL_DIR checkout $CHECKED)"
    fi
fi
"${PIP[@]}" -e "$VLMEVAL_DIR" --no-deps

step "what vlmeval.config, vlmeval.dataset, vlmeval.inference and run.py import"
"${PIP[@]}" "transformers<5" pandas openpyxl xlsxwriter numpy pillow huggingface_hub sty tabulate termcolor tqdm \
    validators filelock portalocker python-dotenv requests rich omegaconf einops accelerate json_repair \
    openai datasets timeout_decorator levenshtein joblib decord jieba nltk rouge rouge_score math_verify \
    "pylatexenc==2.10" "antlr4-python3-runtime==4.11.1" opencv-python-headless zss imageio scipy num2words \
    scikit-learn qwen_vl_utils pytest hypothesis 2>&1 | fold_vlmeval_requirements

# A real torchvision in site-packages would come before the shim on sys.path
# (and fail to load with the CPU torch): stop rather than hide it.
if "$PY" -m pip show torchvision >/dev/null 2>&1; then
    echo "install_vlmeval_cpu.sh: a torchvision distribution is installed in $VENV; it does not work" \
         "with the CPU torch wheel and would shadow the shim: $PY -m pip uninstall torchvision" >&2
    exit 1
fi

# The shim: importable, unusable (docs/vlmeval.md, "The torchvision shim"). It
# has no dist-info, so transformers' is_torchvision_available() stays False.
SHIM_DIR=$VENV/judgecp-torchvision-shim
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
step "torchvision shim $SHIM_DIR/torchvision, on the path through $SITE/judgecp-torchvision-shim.pth"
mkdir -p "$SHIM_DIR/torchvision"
cat > "$SHIM_DIR/torchvision/__init__.py" <<'PY'
"""torchvision stand-in for a CPU-only VLMEvalKit venv (local workaround, not torchvision).

PyPI's torchvision wheels do not work with the CPU torch build on this machine,
yet `import vlmeval` imports torchvision at module level (video datasets,
InternVL, ...). This package makes those imports succeed; anything actually
*used* from it raises, naming the shim. It has no dist-info, so
transformers' `is_torchvision_available()` stays False and its image
processors use their PIL paths.
"""
import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+cpu-shim"
SHIM = True


class _UnavailableMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _UnavailableMeta(name, (_Unavailable,), {"__module__": cls.__module__})


class _Unavailable(metaclass=_UnavailableMeta):
    """Placeholder for any torchvision object: subclassable, unusable."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torchvision is a CPU shim in this venv (judgecp-torchvision-shim, scripts/install_vlmeval_cpu.sh): not usable")

    def __class_getitem__(cls, item):
        return cls

    def __init_subclass__(cls, **kwargs):
        pass


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _UnavailableMeta(name, (_Unavailable,), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_Finder())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return importlib.import_module(f"{__name__}.{name}")
PY
echo "$SHIM_DIR" > "$SITE/judgecp-torchvision-shim.pth"

step "judgecp (editable, extras vlmeval and test) from $JUDGECP_DIR"
"${PIP[@]}" -e "$JUDGECP_DIR[vlmeval,test]" 2>&1 | fold_vlmeval_requirements

step "smoke check"
# (VLMEvalKit logs "Did not detect the .env file" at import: harmless, not shown here)
(cd / && "$PY" -c "import vlmeval.config, vlmeval.dataset, vlmeval.inference, judgecp; print('ok')" 2>&1 \
    | grep -v "Did not detect the .env file")
echo "done: $VENV (run judgecp's integration tests with $PY -m pytest -q tests/vlmeval/)"
