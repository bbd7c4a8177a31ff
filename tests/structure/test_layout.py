"""The package's shape: imports flow one way, modules stay readable, engines know no executor.

* no import cycle among the modules of ``snet`` and ``snet_front`` (module-level
  imports, ``cimport`` included, as well as imports inside functions);
* no source module over ``MAX_LINES`` lines;
* the engines (``snet_front``, ``snet/reference.py``) never name Spark: split
  executors sit behind ``snet.splitexec``;
* the plan declares and the compiler lowers: ``snet/plan.py`` imports nothing
  of the compiler (``snet.syntax``, ``snet.typesys``, ``snet.spg``) nor the
  error policy; ``snet/spg/lower.py`` imports it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("snet", "snet_front")
MAX_LINES = 800


def sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix in (".py", ".pyx", ".pxd", ".pxi") and "__pycache__" not in path.parts:
                yield path


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


CIMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+cimport|cimport\s+([\w.]+))", re.M)
PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def imports_of(path: Path, known: set[str], root: Path = ROOT) -> set[str]:
    """The project modules ``path`` imports (the longest known prefix of each imported name)."""
    text = path.read_text()
    names: set[str] = set()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    else:
        for pattern in (CIMPORT, PYX_IMPORT):
            names.update(a or b for a, b in pattern.findall(text))
    found = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    own = module_name(path, root)
    found.discard(own)
    # A package's __init__ is imported with each of its modules: do not count that edge.
    return {m for m in found if not own.startswith(m + ".")}


def test_no_import_cycle():
    paths = list(sources())
    known = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        graph.setdefault(module_name(path), set()).update(imports_of(path, known))
    # A .pxd and its .pyx are one module: merged above by name.
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(module: str, trail: list[str]) -> bool:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == 1:
                cycle.extend(trail[trail.index(dep):] + [module, dep] if dep in trail else [module, dep])
                return True
            if dep not in state and visit(dep, trail + [module]):
                return True
        state[module] = 2
        return False

    for module in sorted(graph):
        if module not in state and visit(module, []):
            break
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_no_module_is_too_long():
    long = {str(p.relative_to(ROOT)): n for p in sources() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_engines_do_not_name_spark():
    engines = [ROOT / "snet" / "reference.py", *sorted((ROOT / "snet_front").rglob("*.p*"))]
    named = [str(p.relative_to(ROOT)) for p in engines if p.suffix in (".py", ".pyx", ".pxd", ".pxi")
             and "spark" in p.read_text().lower()]
    assert not named, f"engines that name Spark: {named}"


def test_the_plan_imports_no_compiler_module():
    known = {module_name(p) for p in sources()}
    imported = imports_of(ROOT / "snet" / "plan.py", known)
    compiler = sorted(m for m in imported if m.split(".")[:2] in (["snet", "syntax"], ["snet", "typesys"],
                                                                  ["snet", "spg"]) or m == "snet.errorpolicy")
    assert not compiler, f"snet/plan.py imports {compiler}: lowering belongs in snet/spg/lower.py"


def test_cycle_detection_sees_a_cycle(tmp_path):
    """The checker itself: two modules importing each other are found."""
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("from a import x\n")
    assert imports_of(a, {"a", "b"}, tmp_path) == {"b"}
    assert imports_of(b, {"a", "b"}, tmp_path) == {"a"}


# -- the Spark package's size, and no module using another's private names ---------------------------------

SPARK = ROOT / "snet" / "spark"
SPARK_MAX_LINES = 3000  # the batch machinery: splits, whole networks, reaching the cluster
STREAM = SPARK / "stream.py"  # the streaming query, added to the package after its budget was set
STREAM_MAX_LINES = 300


def test_the_spark_package_stays_within_its_size():
    """snet/spark, sub-packages included, holds at most SPARK_MAX_LINES lines (``wc -l``) besides the streaming
    query, and that at most STREAM_MAX_LINES: its machinery exists once (one task core, one fork isolation, one
    error reader, one job-cancel helper, one run cache)."""
    sizes = {p: len(p.read_text().splitlines()) for p in SPARK.rglob("*.py") if "__pycache__" not in p.parts}
    stream = sizes.pop(STREAM)
    total = sum(sizes.values())
    largest = ", ".join(f"{p.relative_to(ROOT)} {n}" for p, n in sorted(sizes.items(), key=lambda i: -i[1])[:5])
    assert total <= SPARK_MAX_LINES, f"snet/spark holds {total} lines besides stream.py, over {SPARK_MAX_LINES} " \
                                     f"(largest: {largest})"
    assert stream <= STREAM_MAX_LINES, f"snet/spark/stream.py holds {stream} lines, over {STREAM_MAX_LINES}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(path: Path, known: set[str], root: Path = ROOT) -> list[str]:
    """The private names of other project modules that ``path`` uses: ``from m import _x``, and ``m._x`` where
    ``m`` names a project module (``import a.b as m``, ``from a import b``, ``import a.b`` then ``a.b._x``).
    Third-party modules are not checked."""
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}  # local name -> project module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif base in known and base != own and _private(alias.name):
                    found.append(f"from {base} import {alias.name}")

    def module_of(value: ast.expr) -> str | None:
        if isinstance(value, ast.Name):
            return modules.get(value.id)
        if isinstance(value, ast.Attribute):
            outer = module_of(value.value)
            if outer is not None and f"{outer}.{value.attr}" in known:
                return f"{outer}.{value.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            module = module_of(node.value)
            if module is not None and module != own:
                found.append(f"{module}.{node.attr}")
    return found


def test_no_module_uses_a_private_name_of_another_module():
    """A name with a leading underscore belongs to its module: what another module needs is public (the
    Python modules of both packages; the Cython sources are not parsed here)."""
    known = {module_name(p) for p in sources()}
    used = {str(p.relative_to(ROOT)): uses for p in sources()
            if p.suffix == ".py" and (uses := private_uses(p, known))}
    assert not used, f"private names of other modules used: {used}"


def test_private_use_detection_sees_both_forms(tmp_path):
    """The checker itself: ``from m import _x`` and ``m._x`` of a project module are found, its own and a
    third-party module's private names are not."""
    (tmp_path / "pkg").mkdir()
    user = tmp_path / "pkg" / "user.py"
    user.write_text("import json\nfrom pkg import other\nfrom pkg.other import _hidden, shown\n"
                    "import pkg.other as o\n_mine = 1\nother._x, o._y, json._default_encoder, _mine\n")
    (tmp_path / "pkg" / "other.py").write_text("_hidden = shown = _x = _y = 1\n")
    known = {"pkg", "pkg.user", "pkg.other"}
    assert sorted(private_uses(user, known, tmp_path)) == ["from pkg.other import _hidden", "pkg.other._x",
                                                           "pkg.other._y"]
