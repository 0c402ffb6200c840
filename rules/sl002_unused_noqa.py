"""SL002 unused-noqa: a ``# noqa: SL...`` code that suppresses nothing."""

from __future__ import annotations

from sampler_lint.rule import Applicability, Example, Rule, Severity


class UnusedNoqa(Rule):
    code = "SL002"
    name = "unused-noqa"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    engine_rule = True  # the engine knows which directives were used
    documentation = """
    A `# noqa: SL...` code that suppresses no finding.

    ## What it does
    Reports each code of a `# noqa: CODES` comment that names a sampler-lint rule and suppressed
    nothing on that line in this run (a rule that is not enabled suppresses nothing either; the
    message says so). Codes of other tools (`E501`, `F401`) and bare `# noqa` comments are left
    alone.

    ## Why is this bad
    A stale suppression hides the next real finding on that line: after a refactor, a `# noqa:
    SL101` left behind will silently swallow a new floor-division shard written there.

    ## Example
    ```python
    idx = idx.tensor_split(world_size)[rank]  # noqa: SL101
    ```

    ## Use instead
    ```python
    idx = idx.tensor_split(world_size)[rank]
    ```

    ## Fix safety
    Safe: it removes only the unused codes, and the whole `# noqa` directive when no code is
    left (other tools' codes and any comment before the directive stay).

    ## References
    - Ruff's `RUF100` (unused-noqa), which this follows
    """

    examples = (
        Example(
            "def f(idx, world_size, rank):\n"
            "    return idx.tensor_split(world_size)[rank]  # noqa: SL101\n",
            lines=(2,),
            fixed=(
                "def f(idx, world_size, rank):\n"
                "    return idx.tensor_split(world_size)[rank]\n"
            ),
        ),
        Example("line = 'a very long line indeed'  # noqa: E501\n"),
    )
