"""Every public function and class of engine, store, stats, targets and workloads says in
a docstring what it guarantees. The ones from before this rule are listed in
tests/undocumented.txt, a list that may only shrink."""

from __future__ import annotations

import ast

from support import ROOT, TESTS

PACKAGES = ("engine", "store", "stats", "targets", "workloads")


def undocumented(source: str, module: str) -> list[str]:
    """module:Qual.name of each public def or class (methods too) without a docstring."""
    found: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("_"):
                if ast.get_docstring(node) is None:
                    found.append(f"{module}:{prefix}{node.name}")
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(source).body, "")
    return found


def test_new_public_functions_have_docstrings() -> None:
    listed = {line for line in (TESTS / "undocumented.txt").read_text().splitlines()
              if line and not line.startswith("#")}
    missing = []
    src = ROOT / "src"
    for package in PACKAGES:
        for path in sorted((src / "volbench" / package).rglob("*.py")):
            module = ".".join(path.relative_to(src).with_suffix("").parts)
            missing += undocumented(path.read_text(), module)
    new = sorted(set(missing) - listed)
    assert not new, ("say in a docstring what these guarantee (not what they do line by "
                     f"line): {new}")


def test_the_check_sees_methods_and_skips_private_names() -> None:
    source = ('def f():\n    pass\n\ndef _g():\n    pass\n\nclass C:\n    """C."""\n'
              '    def m(self):\n        pass\n    def n(self):\n        """N."""\n')
    assert undocumented(source, "volbench.x") == ["volbench.x:f", "volbench.x:C.m"]
