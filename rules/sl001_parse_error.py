"""SL001 parse-error: reported by the engine for files it cannot read or parse."""

from __future__ import annotations

from sampler_lint.rule import Rule, Severity


class ParseError(Rule):
    code = "SL001"
    name = "parse-error"
    severity = Severity.ERROR
    engine_rule = True
    documentation = """
    A file that cannot be read, decoded or parsed.

    ## What it does
    Reports files that sampler-lint could not analyse: syntax errors, undecodable bytes, NUL bytes,
    unreadable files, or code nested too deeply to parse. The finding points at the line and column
    where parsing failed, and linting goes on with the other files.

    ## Why is this bad
    A file that cannot be parsed cannot be checked, so any bug in it stays hidden. A syntax error is
    usually caught by Python first; a file in an unusual encoding or with a stray NUL byte often is
    not, until it is imported on the cluster.

    Only files that could contain a finding are parsed (see the pre-filter in the README), so a
    syntax error in a file unrelated to data loading is left to your other tools.

    ## Example
    ```python
    def train(:
        ...
    ```

    ## Use instead
    Fix the syntax error, or save the file as UTF-8 (or declare its encoding with a coding cookie).

    ## Fix safety
    There is no fix.

    ## References
    - Python's source code encoding: PEP 263
    """
