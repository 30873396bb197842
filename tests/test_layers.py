"""The package's layers import one way only: lower layers never import higher ones.

    errors, version  ->  runtime  ->  genome  ->  tokenizer  ->  data | attention  ->  model
            ->  tasks | hf | inference  ->  training | attribution  ->  predict | train | demo
            ->  pretrained (the BigBirdDNA API, over inference) | evaluate (k-fold runs of train)
            ->  embed | variants | score | explain (the API's CLIs)

Every ``import`` in every module is checked, including imports inside functions, so a lazy
upward import fails as surely as one at the top of a file; so is every module named in a
dynamic import (``importlib.import_module("bigbird_dna....")``, ``__import__``). The package root
(``bigbird_dna/__init__.py``, the public API) sits above every layer: no module imports from it.
Packages on the same level (``data`` and ``attention``; ``predict``, ``train`` and ``demo``) do
not import each other either.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import bigbird_dna

PACKAGE_DIR = Path(bigbird_dna.__file__).parent
LAYERS = {
    "errors": 0, "version": 0,
    "runtime": 1,
    "genome": 2,
    "tokenizer": 3,
    "data": 4, "attention": 4,
    "model": 5, "evaluation": 5, "motifs": 5,
    "tasks": 6, "hf": 6, "inference": 6,
    "training": 7, "attribution": 7,
    "predict": 8, "train": 8, "demo": 8,
    "pretrained": 9, "evaluate": 9,
    "embed": 10, "variants": 10, "score": 10, "explain": 10,
}


ROOT = "__init__"  # the package root: the public API, above every layer
LAYERS[ROOT] = max(LAYERS.values()) + 1


def _part(module: str) -> str | None:
    """The top-level part of ``bigbird_dna.X.Y`` (``X``; :data:`ROOT` for the package itself), or
    None outside the package."""
    pieces = module.split(".")
    if pieces[0] != "bigbird_dna":
        return None
    return pieces[1] if len(pieces) > 1 else ROOT


def _dynamic(node: ast.AST) -> str | None:
    """The module a call ``importlib.import_module("...")``/``import_module(...)``/``__import__(...)``
    names, when its first argument is a string or an f-string with a constant start."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name not in ("import_module", "__import__"):
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
        return str(first.values[0].value).rstrip(".")
    return None


def _imports(path: Path, package_dir: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``bigbird_dna`` import in a source file, absolute or relative."""
    package = ".".join(("bigbird_dna", *path.relative_to(package_dir).parent.parts))
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if module == "bigbird_dna":  # from the root: a subpackage, or a name of the public API
                found += [(node.lineno, f"{module}.{alias.name}" if alias.name in LAYERS else module)
                          for alias in node.names]
            else:
                found.append((node.lineno, module))
        elif (dynamic := _dynamic(node)) is not None:
            found.append((node.lineno, dynamic))
    return [(line, module) for line, module in found if _part(module)]


def upward_imports(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Every import that goes up a layer or sideways between packages of one layer."""
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative == Path("__init__.py"):
            continue  # the public API at the top re-exports from every layer
        own = relative.parts[0].removesuffix(".py")
        for line, module in _imports(path, package_dir):
            other = _part(module)
            if other == own or other not in LAYERS:
                continue
            if LAYERS[other] >= LAYERS[own]:
                problems.append(f"{relative}:{line} ({own}, layer {LAYERS[own]}) imports {module} "
                                f"({other}, layer {LAYERS[other]})")
    return problems


def test_every_package_module_belongs_to_a_layer():
    parts = {p.relative_to(PACKAGE_DIR).parts[0].removesuffix(".py") for p in PACKAGE_DIR.rglob("*.py")}
    assert parts - {"__init__"} <= set(LAYERS), sorted(parts - {"__init__"} - set(LAYERS))


def test_layers_import_one_way():
    assert upward_imports() == []


@pytest.mark.parametrize("source, expected", [
    ("from bigbird_dna.tasks.mlm import MLMTask\n", "imports bigbird_dna.tasks.mlm"),
    ("def f():\n    from bigbird_dna.predict.driver import iter_windows\n", "imports bigbird_dna.predict.driver"),
    ("from bigbird_dna.attention import preset\n", "imports bigbird_dna.attention"),
    ("from bigbird_dna import BigBirdDNA\n", "imports bigbird_dna (__init__"),
    ("import importlib\nimportlib.import_module('bigbird_dna.tasks.mlm')\n", "imports bigbird_dna.tasks.mlm"),
    ("from importlib import import_module\nimport_module(f'bigbird_dna.predict.{name}')\n",
     "imports bigbird_dna.predict"),
])
def test_an_upward_or_sideways_import_is_caught(tmp_path, source, expected):
    """The check itself can fail: a data module that imports a task, a predictor, attention, the
    package root, or a module named in a dynamic import."""
    fake = tmp_path / "bigbird_dna"
    (fake / "data").mkdir(parents=True)
    (fake / "data" / "bad.py").write_text(source)
    problems = upward_imports(fake)
    assert len(problems) == 1 and expected in problems[0], problems


TRAINING_STACK = ("lightning", "torchmetrics", "hydra.core.global_hydra")  # hydra's config store is training's
INFERENCE_ENTRY_POINTS = ("bigbird_dna.predict.cli", "bigbird_dna.pretrained", "bigbird_dna.embed",
                          "bigbird_dna.score.__main__", "bigbird_dna.variants.__main__")


@pytest.mark.parametrize("entry", INFERENCE_ENTRY_POINTS)
def test_inference_does_not_import_the_training_stack(entry):
    """Inference runs plain modules (model/inference.py): Lightning, and the torchmetrics it brings
    (which imports transformers and scipy when installed), cost ~4.5 s before a scan's first batch."""
    code = f"import sys, {entry}; print(' '.join(m for m in {TRAINING_STACK!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"importing {entry} loads {loaded}"
