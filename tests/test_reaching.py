"""The one assignment that reaches a name's use (``sampler_lint.analysis.reaching``): exact in
straight-line code, ``None`` wherever another value could arrive."""

from __future__ import annotations

import ast
import textwrap

import pytest

from sampler_lint.analysis.reaching import only_reaching_value
from sampler_lint.analysis.syntax_summary import SyntaxSummary


def _reaching(code: str) -> str | None:
    """The source of the value reaching the argument of the last ``use(...)`` call."""
    tree = ast.parse(textwrap.dedent(code))
    summary = SyntaxSummary.of(tree)
    call = [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "use"
    ][-1]
    argument = call.args[0]
    assert isinstance(argument, ast.Name)
    function = summary.enclosing_function(argument)
    assert function is not None
    value = only_reaching_value(summary, function, argument)
    return None if value is None else ast.unparse(value)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # LAVIS's `_create_loader`: each wrap sees the value just before it.
        ("""
         def f(d):
             loader = DataLoader(d, sampler=s)
             loader = Prefetch(loader)
             if train:
                 loader = use(loader)
             return loader
         """, "Prefetch(loader)"),
        ("""
         def f(d):
             loader = DataLoader(d)
             loader = use(loader)
         """, "DataLoader(d)"),
        ("""
         def f(d):
             loader: Loader = DataLoader(d)
             x = 1
             with ctx():
                 use(loader)
             loader = other()
         """, "DataLoader(d)"),
        ("""
         def f(d):
             loader = a = DataLoader(d)
             try:
                 use(loader)
             except E:
                 pass
             loader = other()
         """, "DataLoader(d)"),
        ("""
         def f(d):
             loader = DataLoader(d)
             for x in xs:
                 use(loader)
             loader = other()
         """, "DataLoader(d)"),
        ("""
         def f(d):
             loader = first()
             try:
                 x = 1
             except E:
                 use(loader)
             loader = other()
         """, "first()"),
    ],
)
def test_the_one_value_that_reaches(code: str, expected: str) -> None:
    assert _reaching(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        # A branch that may rebind it.
        """
        def f(d):
            loader = a()
            if c:
                loader = b()
            use(loader)
        """,
        # A loop whose later iteration brings its own value.
        """
        def f(d):
            loader = a()
            for x in xs:
                use(loader)
                loader = b()
        """,
        """
        def f(d):
            loader = a()
            while c:
                use(loader)
                loader = b()
        """,
        # A try body that may have run partly.
        """
        def f(d):
            loader = a()
            try:
                loader = b()
            except E:
                use(loader)
        """,
        """
        def f(d):
            loader = a()
            try:
                loader = b()
            finally:
                use(loader)
        """,
        # Unpacked, augmented, a walrus, `with ... as`, an import, a deletion.
        """
        def f(d):
            loader = a()
            loader, other = b()
            use(loader)
        """,
        """
        def f(d):
            loader = a()
            loader += b()
            use(loader)
        """,
        """
        def f(d):
            loader = a()
            if (loader := b()):
                pass
            use(loader)
        """,
        """
        def f(d):
            loader = a()
            with b() as loader:
                pass
            use(loader)
        """,
        """
        def f(d):
            loader = a()
            from m import loader
            use(loader)
        """,
        # A closure that may rebind it, declared anywhere in the function.
        """
        def f(d):
            def g():
                nonlocal loader
                loader = b()
            loader = a()
            g()
            use(loader)
        """,
        # Deferred or scoped anew.
        """
        def f(d):
            loader = a()
            loader = b()
            call(lambda: use(loader))
        """,
        # Not bound in this function before the use.
        """
        def f(loader):
            use(loader)
            loader = a()
        """,
        # A match statement.
        """
        def f(d):
            loader = a()
            match d:
                case 1:
                    use(loader)
        """,
    ],
)
def test_gives_up_where_another_value_may_arrive(code: str) -> None:
    assert _reaching(code) is None
