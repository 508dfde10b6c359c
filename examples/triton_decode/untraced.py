"""The kernels of a module written with tilescope.triton, without the helpers: every
``if TS:`` block, the TS_BUF / TS_META / TS parameters and the ``**ts`` launch arguments removed
from the source (Python's ast), written beside a temporary folder and imported. What the
production kernel would be had it never been instrumented: bench_helpers.py compares the
instrumented kernel launched with TS=False against it (code and time)."""
from __future__ import annotations

import ast
import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType

TRACE_PARAMS = {"TS_BUF", "TS_META", "TS"}


class _Strip(ast.NodeTransformer):
    def visit_If(self, node: ast.If):
        if isinstance(node.test, ast.Name) and node.test.id == "TS":
            return node.orelse or None
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef):
        node.args.args = [a for a in node.args.args if a.arg not in TRACE_PARAMS]
        self.generic_visit(node)
        if not node.body:
            node.body = [ast.Pass()]
        return node

    def visit_Call(self, node: ast.Call):
        node.keywords = [k for k in node.keywords
                         if not (k.arg is None and isinstance(k.value, ast.Name) and k.value.id == "ts")]
        return self.generic_visit(node)


def source_without_tracing(path: Path) -> str:
    tree = _Strip().visit(ast.parse(Path(path).read_text()))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def load_without_tracing(path: Path, name: str = "untraced_kernels") -> ModuleType:
    """Imports ``path``'s source without the tracing (Triton reads a kernel's source from its file,
    so the module is written to a file first)."""
    folder = Path(tempfile.mkdtemp(prefix="tilescope-untraced-"))
    target = folder / f"{name}.py"
    target.write_text(source_without_tracing(path))
    spec = importlib.util.spec_from_file_location(name, target)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
