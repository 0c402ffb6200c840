"""The ``sampler-lint`` command line (click).

Exit codes: 0 nothing left to report, 1 findings remain (after fixing, when fixing; warnings too
unless ``--fail-on error``) or ``--diff`` found changes, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sampler_lint import __version__
from sampler_lint.engine import registry, replay
from sampler_lint.engine.config import ConfigError, ConfigResolver, RawSettings, Settings, resolve
from sampler_lint.engine.findings import Finding, plural
from sampler_lint.engine.lint_helper import GC_THRESHOLDS
from sampler_lint.engine.runner import (
    Given,
    RunOptions,
    RunResult,
    lint_options_for,
    run,
    stdin_index,
)
from sampler_lint.output.docs import render_rule, rule_json, rule_table, rules_matching
from sampler_lint.output.reporters import NEEDS_EDITS, REPORTERS, ReportContext, diff_summary

if TYPE_CHECKING:
    from sampler_lint.output.baseline import Revision

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# How this run talks (set once from -q / -s / --color by :func:`_set_echo`).
_QUIET = False  # findings only: no summary, no notes, no progress
_SILENT = False  # nothing at all: the exit code tells
_COLOR = False


def _set_echo(params: dict[str, Any]) -> None:
    global _QUIET, _SILENT, _COLOR
    _SILENT = bool(params.get("silent"))
    _QUIET = _SILENT or bool(params.get("quiet"))
    _COLOR = use_color(params.get("color") or "auto", sys.stdout.isatty())


def use_color(choice: str, is_terminal: bool) -> bool:
    """``--color``: always / never; auto is on for a terminal, off with ``NO_COLOR`` set (non
    empty, as https://no-color.org says), on with ``FORCE_COLOR`` set, whatever the stream."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_terminal


def _warn(message: str) -> None:
    if not _SILENT:
        click.echo(f"sampler-lint: warning: {message}", err=True)


def _info(message: str) -> None:
    if not _QUIET:
        click.echo(message, err=True)


def _fail(message: str) -> NoReturn:
    click.echo(f"sampler-lint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _split(values: Sequence[str]) -> tuple[str, ...]:
    """``--select SL1,SL2 --select SL3`` -> ``("SL1", "SL2", "SL3")``."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _per_file_ignores(values: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    entries = []
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern or not codes:
            _fail(f"--per-file-ignores expects PATTERN:CODE[,CODE], got '{value}'")
        entries.append((pattern, _split([codes])))
    return tuple(entries)


def _cli_settings(params: dict[str, Any]) -> RawSettings:
    for key in ("select", "extend_select", "ignore", "fixable", "unfixable", "extend_fixable"):
        for selector in _split(params[key]):
            try:
                registry.expand_selector(selector)
            except registry.SelectorError as error:
                _fail(f"--{key.replace('_', '-')}: {error}")
    per_file = _per_file_ignores(params["per_file_ignores"])
    per_file += _per_file_ignores(params["extend_per_file_ignores"])
    for _, codes in per_file:
        for code in codes:
            try:
                registry.expand_selector(code)
            except registry.SelectorError as error:
                _fail(f"--per-file-ignores: {error}")
    return RawSettings(
        select=_split(params["select"]) or None,
        extend_select=_split(params["extend_select"]),
        ignore=_split(params["ignore"]),
        exclude=_split(params["exclude"]) or None,
        extend_exclude=_split(params["extend_exclude"]),
        per_file_ignores=per_file,
        respect_gitignore=params["respect_gitignore"],
        unsafe_fixes=params["unsafe_fixes"],
        fixable=_split(params["fixable"]) or None,
        extend_fixable=_split(params["extend_fixable"]),
        unfixable=_split(params["unfixable"]),
        force_exclude=params["force_exclude"],
    )


def _config_arguments(values: Sequence[str]) -> tuple[Path | None, RawSettings]:
    """``--config``: one configuration file, and any number of inline ``KEY = VALUE`` settings
    (TOML, as in a ``[tool.sampler-lint]`` table) that go over every configuration file."""
    from sampler_lint.engine.config import parse_table

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

    config_file: Path | None = None
    inline = RawSettings()
    for value in values:
        if Path(value).is_file() or "=" not in value:
            if config_file is not None:
                _fail("--config: give at most one configuration file (and any number of "
                      "KEY = VALUE settings)")
            config_file = Path(value)
            continue
        try:
            table = tomllib.loads(value)
        except tomllib.TOMLDecodeError as error:
            _fail(f"--config {value!r}: neither a file nor a TOML `KEY = VALUE`: {error}")
        if "extend" in table:
            _fail("--config: 'extend' can only be set in a configuration file")
        try:
            inline = inline.layered(parse_table(table, f"--config {value!r}"))
        except ConfigError as error:
            _fail(str(error))
    return config_file, inline


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
ISSUES_URL = "https://github.com/sampler-lint/sampler-lint/issues"


class _Main(click.Group):
    """The one top-level handler: whatever goes wrong, exit codes keep their meaning."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort,
                SystemExit, BrokenPipeError):
            raise  # click's own exits and messages, and `| head`
        except KeyboardInterrupt:
            _interrupted()
        except Exception as error:  # a bug anywhere must still end as exit 2
            _unexpected(error)


def _interrupted() -> NoReturn:
    from sampler_lint.engine.writer import files_written

    written = files_written()
    message = "sampler-lint: interrupted"
    if written:
        message += (
            f"; {written} file(s) were already fixed and rewritten (each file is whole: "
            "rewritten completely or not at all)"
        )
    click.echo(message, err=True)
    sys.exit(EXIT_INTERRUPTED)


def _unexpected(error: Exception) -> NoReturn:
    import os
    import traceback

    click.echo(f"sampler-lint: error: {type(error).__name__}: {error}", err=True)
    click.echo(
        "sampler-lint: this is a bug in sampler-lint; please report it at "
        f"{ISSUES_URL} with the command you ran and the traceback "
        "(set SAMPLER_LINT_TRACEBACK=1 to print it).",
        err=True,
    )
    if os.environ.get("SAMPLER_LINT_TRACEBACK"):
        click.echo("".join(traceback.format_exception(error)), err=True, nl=False)
    sys.exit(EXIT_ERROR)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="sampler-lint")
def main() -> None:
    """Find and fix the silent bugs of distributed data loading in PyTorch training code."""


def console_main() -> None:
    """The ``sampler-lint`` command (``python -m sampler_lint`` too): :func:`main` in a process
    of its own. The collector is tuned here, not in :func:`main`, which tests and other programs
    call inside their own process. What the imports made is frozen first: it lives as long as
    the process, so no collection scans it again, and forked workers share its pages instead of
    copying them as a collection touches each object."""
    import gc

    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    main()


class _Check(click.Command):
    """``--add-noqa=REASON`` takes its value only after ``=`` (as Ruff's): a bare ``--add-noqa``
    followed by a path must never take the path for a reason."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rewritten: list[str] = []
        for arg in args:
            if arg.startswith("--add-noqa="):
                rewritten += ["--add-noqa", "--add-noqa-reason", arg.split("=", 1)[1]]
            else:
                rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


@main.command(cls=_Check)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix/--no-fix", default=None,
              help="Apply safe fixes (and unsafe ones with --unsafe-fixes); --no-fix overrides.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Also offer and apply unsafe fixes (default: the `unsafe-fixes` setting).")
@click.option("--fix-only", is_flag=True,
              help="Apply fixes, but report nothing left over and exit 0 (implies --fix).")
@click.option("--fixable", multiple=True, help="Rules whose fixes may apply (default: ALL).")
@click.option("--unfixable", multiple=True, help="Rules whose fixes never apply.")
@click.option("--extend-fixable", multiple=True, help="Rules to make fixable on top of fixable.")
@click.option("--diff", is_flag=True, help="Print fixes as a unified diff; write nothing.")
@click.option("--select", multiple=True, help="Rules to enable (codes, names, prefixes, ALL).")
@click.option("--ignore", multiple=True, help="Rules to disable.")
@click.option("--extend-select", multiple=True, help="Rules to enable on top of the selection.")
@click.option("--per-file-ignores", multiple=True, help="PATTERN:CODE[,CODE] to ignore per file.")
@click.option("--extend-per-file-ignores", multiple=True,
              help="PATTERN:CODE[,CODE] to ignore per file, on top of the configuration's.")
@click.option("--exclude", multiple=True, help="Replace the default excludes with these patterns.")
@click.option("--extend-exclude", multiple=True, help="Exclude these patterns too.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply excludes to files named explicitly (default: `force-exclude`).")
@click.option(
    "--respect-gitignore/--no-respect-gitignore", default=None,
    help="Honour .gitignore, .git/info/exclude and git's global excludes (default: on).",
)
@click.option(
    "--output-format",
    type=click.Choice(sorted(REPORTERS)),
    multiple=True,
    envvar="SAMPLER_LINT_OUTPUT_FORMAT",
    help="Output format (default: `output-format` in the configuration, else full; env: "
    "SAMPLER_LINT_OUTPUT_FORMAT). Repeat it, each with its own --output-file, to write "
    "several formats in one run; a format without a file goes to standard output.",
)
@click.option(
    "--output-file", "-o", type=click.Path(path_type=Path), multiple=True,
    help="Write the output of the matching --output-format here.",
)
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of findings.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per rule.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option(
    "--fail-on", type=click.Choice(["warning", "error"]), default="warning", show_default=True,
    help="Lowest severity of a remaining finding that makes the run exit 1: `warning` (any "
    "finding fails the run) or `error` (warnings are reported but exit 0).",
)
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when any fix was applied.")
@click.option("--config", "config_values", multiple=True, metavar="FILE|KEY=VALUE",
              help="Use this configuration file; or set one key as TOML (`select = [\"SL1\"]`) "
              "over every configuration. Repeatable.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Where the cache lives.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, help="Processes (0: cores).")
@click.option("--stdin-filename", type=click.Path(path_type=Path), help="Name for source on stdin.")
@click.option("--baseline", type=click.Path(path_type=Path),
              help="Report only findings this baseline file does not hold.")
@click.option("--write-baseline", type=click.Path(path_type=Path),
              help="Write the current findings to this baseline file and exit 0.")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to the line of every current finding; "
              "`--add-noqa=REASON` writes the reason after the codes.")
@click.option("--add-noqa-reason", hidden=True, default="", help="Set by --add-noqa=REASON.")
@click.option("--ignore-noqa", is_flag=True,
              help="Ignore `# noqa` comments and file-level directives.")
@click.option("--show-files", is_flag=True, help="List the files that would be linted, and exit.")
@click.option("--show-settings", is_flag=True,
              help="Show the settings that apply to the first path, and exit.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
              help="Colour the output (auto: on a terminal, unless NO_COLOR; FORCE_COLOR forces).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings, but nothing else.")
@click.option("-s", "--silent", is_flag=True, help="Print nothing; only the exit code tells.")
@click.option("-v", "--verbose", is_flag=True,
              help="Say which configuration each folder used and how long each stage took.")
@click.option("--since", metavar="REV",
              help="Report only findings on lines added or changed since this git revision.")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file (for tests).")
def check(paths: tuple[Path, ...], **params: Any) -> None:
    """Lint PATHS (default: the current directory); `-` reads standard input."""
    started = time.perf_counter()
    params["fix"] = bool(params["fix"] or params["fix_only"]) and params["fix"] is not False
    if params["add_noqa"] and (params["fix"] or params["diff"]):
        _fail("--add-noqa cannot be combined with --fix or --diff")
    config_file, inline = _config_arguments(params["config_values"])
    params["config_file"] = config_file
    if params["isolated"] and config_file:
        _fail("--config and --isolated cannot be used together")
    try:
        cli = inline.layered(_cli_settings(params))
        resolver = ConfigResolver(cli, config_file=config_file, isolated=params["isolated"])
    except ConfigError as error:
        _fail(str(error))
    here = _working_settings(resolver)
    _set_echo(params)
    if here.output_format and here.output_format not in REPORTERS:
        _fail(f"output-format {here.output_format!r} is not available in this version")
    formats = params["output_format"] or ((here.output_format,) if here.output_format else ())
    outputs = _output_plan(formats, params["output_file"])
    force_exclude = params["force_exclude"]
    options = RunOptions(
        fix=params["fix"],
        unsafe_fixes=params["unsafe_fixes"],
        diff=params["diff"],
        want_edits=any(fmt in NEEDS_EDITS for fmt, _ in outputs),
        jobs=params["jobs"],
        force_exclude=here.force_exclude if force_exclude is None else force_exclude,
        use_prefilter=not params["no_prefilter"],
        use_cache=not params["no_cache"],
        cache_dir=params["cache_dir"],
        ignore_noqa=params["ignore_noqa"],
    )
    if params["show_settings"]:
        _show_settings(list(paths) or [Path(".")], resolver)
        return
    if params["show_files"]:
        _show_files(list(paths) or [Path(".")], resolver, options)
        return
    if list(paths) == [Path("-")]:
        _check_stdin(resolver, options, params)
        return
    if Path("-") in paths:
        _fail("`-` (standard input) cannot be combined with other paths")
    targets = list(paths) or [Path(".")]
    from sampler_lint.engine.cache import UNUSABLE

    UNUSABLE.clear()  # this run's cache problems, not an earlier run's in the same process
    if _replayable(params, outputs):
        _allow_replay(params, targets)
    surveyed = time.perf_counter()
    try:
        result = run(targets, resolver, options, progress=None if _QUIET else _progress())
    except ConfigError as error:
        _fail(str(error))
    if options.fix:
        from sampler_lint.engine.writer import files_written

        if files_written():
            replay.spoil()  # the next run reads what this one wrote
    if params["verbose"]:
        _verbose_report(resolver, result, surveyed - started, time.perf_counter() - surveyed)
    if UNUSABLE:
        replay.spoil()  # a cache that could not be written may be writable next time
    if params["cache_dir"] is not None and not params["no_cache"]:
        for message in UNUSABLE.values():
            _warn(message)
    path_errors = _path_errors(result, targets)
    errors = [e for r in result.results for e in r.errors]
    internal = any(r.internal_error for r in result.results)
    failed = bool(internal or path_errors)  # exit 2 whatever else happens
    if not result.files_checked and not path_errors:
        _warn("No Python files found under the given path(s)")
    for message in [*result.problems.warnings, *errors]:
        _warn(message)
    for message in path_errors:
        if not _SILENT:
            click.echo(f"sampler-lint: error: {message}", err=True)
    findings: list[Finding] = sorted(
        (f for r in result.results for f in r.findings), key=Finding.sort_key
    )
    findings = _adoption_filters(findings, params, targets, failed, resolver, options, result)
    if params["add_noqa"]:
        from sampler_lint.output.add_noqa import add_noqa

        added, problems = add_noqa(findings, reason=params["add_noqa_reason"])
        for problem in problems:
            _warn(problem)
        _info(f"Added {added} noqa directive(s).")
        sys.exit(EXIT_ERROR if problems or failed else EXIT_OK)
    fixed = sum(r.fixed for r in result.results)
    fixed_by_code: dict[str, int] = {}
    for r in result.results:
        for code, count in r.fixed_codes.items():
            fixed_by_code[code] = fixed_by_code.get(code, 0) + count
    fixed_by_file = {r.filename: dict(r.fixed_codes) for r in result.results if r.fixed_codes}
    unsafe = options.unsafe_fixes
    if unsafe is None:
        try:
            unsafe = resolver.for_directory(Path(".")).unsafe_fixes
        except ConfigError:  # the working folder's configuration is broken (reported if used)
            unsafe = False
    context = ReportContext(
        unsafe_fixes=bool(unsafe),
        fixing=options.fix,
        show_fixes=params["show_fixes"],
        statistics=params["statistics"],
        fixed=fixed if options.fix and not options.diff else 0,
        fixed_by_code=fixed_by_code if options.fix and not options.diff else {},
        files_checked=result.files_checked,
        complete=bool(result.files_checked) and not failed,
        fixed_by_file=fixed_by_file if options.fix and not options.diff else {},
        quiet=_QUIET,
    )
    if params["fix_only"] and not options.diff:
        if not failed:
            _info(f"Fixed {fixed} error{'s' if fixed != 1 else ''}.")
        status = EXIT_ERROR if failed else EXIT_OK
        if params["exit_non_zero_on_fix"] and fixed and not failed:
            status = EXIT_FINDINGS
        sys.exit(status)
    if options.diff:
        diffs = [r.diff for r in result.results if r.diff]
        if not _SILENT:
            click.echo("".join(diffs), nl=False)
        if not _QUIET:
            click.echo(diff_summary(fixed_by_code, findings, bool(unsafe)), err=True)
        sys.exit(EXIT_ERROR if failed else (EXIT_FINDINGS if diffs else EXIT_OK))
    for fmt, output in outputs:
        _emit(findings, context, fmt, output)
    if failed:
        sys.exit(EXIT_ERROR)
    status = EXIT_FINDINGS if _fails(findings, params) and not params["exit_zero"] else EXIT_OK
    if params["exit_non_zero_on_fix"] and fixed:
        status = EXIT_FINDINGS
    sys.exit(status)


def _working_settings(resolver: ConfigResolver) -> Settings:
    """The settings of the working folder, for what applies to the whole run (output format,
    force-exclude); a broken configuration there is reported where it governs files, so the run
    goes on with the defaults here."""
    try:
        return resolver.for_directory(Path("."))
    except ConfigError:
        return resolve(resolver.cli, Path.cwd(), None)


def _show_files(paths: list[Path], resolver: ConfigResolver, options: RunOptions) -> None:
    """``--show-files``: every file a run would lint, one per line, sorted (as Ruff)."""
    from sampler_lint.engine.discovery import Problems, iter_source_files

    problems = Problems()
    try:
        files = sorted(
            str(p.resolve()) for p in iter_source_files(
                paths, resolver, force_exclude=options.force_exclude, problems=problems
            )
        )
    except ConfigError as error:
        _fail(str(error))
    for message in problems.warnings:
        _warn(message)
    click.echo("\n".join(files) + ("\n" if files else ""), nl=False)
    sys.exit(EXIT_ERROR if problems.missing or problems.config_errors else EXIT_OK)


def _show_settings(paths: list[Path], resolver: ConfigResolver) -> None:
    """``--show-settings``: the resolved settings of the first path, as TOML-like lines."""
    path = paths[0]
    try:
        settings = resolver.for_path(path)
    except ConfigError as error:
        _fail(str(error))
    lines = [
        f"Resolved settings for: {path.resolve()}",
        f"Settings path: {settings.source.resolve() if settings.source else '(none: defaults)'}",
        f"root = {str(settings.root)!r}",
        f"enabled = {sorted(settings.enabled)}",
        f"fixable = {sorted(settings.fixable)}",
        f"unsafe-fixes = {str(settings.unsafe_fixes).lower()}",
        f"respect-gitignore = {str(settings.respect_gitignore).lower()}",
        f"force-exclude = {str(settings.force_exclude).lower()}",
        f"output-format = {settings.output_format or 'full'!r}",
        f"exclude = {list(settings.exclude)}",
        "per-file-ignores = {"
        + ", ".join(f"{p!r} = {sorted(c)}" for p, c in settings.per_file_ignores) + "}",
    ]
    for key, value in sorted(settings.options.items()):
        lines.append(f"{key} = {_toml(value)}")
    click.echo("\n".join(lines))
    sys.exit(EXIT_OK)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _verbose_report(resolver: ConfigResolver, result: RunResult, setup: float,
                    run_time: float) -> None:
    """``-v``: which configuration each linted folder used, and the time of each stage."""
    folders: dict[str, set[str]] = {}
    for linted in result.linted:
        try:
            settings = resolver.for_path(linted)
        except ConfigError:
            continue
        source = str(settings.source) if settings.source else "(defaults, no configuration file)"
        folders.setdefault(source, set()).add(str(linted.parent))
    for source, where in sorted(folders.items()):
        shown = ", ".join(sorted(where)[:5]) + (" ..." if len(where) > 5 else "")
        click.echo(f"sampler-lint: config {source}: {len(where)} folder(s): {shown}", err=True)
    stages = result.stages
    click.echo(
        f"sampler-lint: timing: settings and rules {_ms(setup)}, walk {_ms(stages.walk)}, "
        f"survey {_ms(stages.survey)} ({plural(stages.surveyed, 'file')}), "
        f"index stage {_ms(stages.index)} ({plural(stages.asked, 'file')} asked about), "
        f"lint {_ms(stages.lint)} ({plural(stages.linted, 'file')} left by the pre-filters"
        f"{_helped(stages.helped)}), "
        f"caches {_ms(stages.caches)}; {_ms(run_time)} for {result.files_checked} file(s) in all",
        err=True,
    )


def _helped(files: int) -> str:
    # The lint helper (sampler_lint.engine.lint_helper) imported libcst while the run read the
    # project: said, so that a user comparing two runs' timings knows why the lint stage shrank.
    return f", {files} in the helper process" if files else ""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _fails(findings: Sequence[Finding], params: dict[str, Any]) -> bool:
    """Do the findings left fail the run? Any finding does; with ``--fail-on error``, only
    findings of rules whose severity is ``error``."""
    if params.get("fail_on") == "error":
        return any(f.severity == "error" for f in findings)
    return bool(findings)


def _path_errors(result: Any, targets: list[Path]) -> list[str]:
    """Errors for the paths the user named that could not be linted: one that does not exist
    (the others are still linted, as Ruff's E902), a named file that cannot be read."""
    messages = [f"{path}: No such file or directory" for path in result.problems.missing]
    messages += result.problems.config_errors
    named = {str(path) for path in targets}
    messages += [
        f"{r.filename}: cannot be read" for r in result.results
        if r.unreadable and r.filename in named
    ]
    return messages


def _adoption_filters(
    findings: list[Finding], params: dict[str, Any], targets: list[Path], failed: bool,
    resolver: ConfigResolver, options: RunOptions, result: RunResult,
) -> list[Finding]:
    """--write-baseline (writes and exits), --baseline and --since."""
    from sampler_lint.output.baseline import (
        BaselineError,
        new_since,
        without_baseline,
        write_baseline,
    )

    try:
        if params["write_baseline"] is not None:
            write_baseline(params["write_baseline"], findings)
            click.echo(
                f"Wrote {len(findings)} finding(s) to the baseline {params['write_baseline']}.",
                err=True,
            )
            sys.exit(EXIT_ERROR if failed else EXIT_OK)
        if params["baseline"] is not None:
            findings = without_baseline(params["baseline"], findings)
        if params["since"] is not None:
            findings = new_since(
                params["since"], targets, findings, _revision_linter(resolver, options, targets),
                result.linted, result.project, _project_excludes(resolver),
            )
    except BaselineError as error:
        _fail(str(error))
    return findings


def _revision_linter(
    resolver: ConfigResolver, options: RunOptions, targets: list[Path]
) -> Callable[[Revision], list[Finding]]:
    """Lint files as they were at a revision (``--since``): their contents from memory, the
    project index of the revision, today's configuration, nothing written."""
    from dataclasses import replace

    from sampler_lint.engine.sources import overlay

    def lint(revision: Revision) -> list[Finding]:
        quiet = replace(options, fix=False, diff=False, want_edits=False)
        given = Given(revision.files, revision.project, revision.wanted)
        with overlay(revision.contents):
            result = run(targets, resolver, quiet, given=given)
        return [f for r in result.results for f in r.findings]

    return lint


def _project_excludes(resolver: ConfigResolver) -> Callable[[Path], bool]:
    def excluded(path: Path) -> bool:
        try:
            return resolver.for_path(path).is_excluded(path)
        except ConfigError:
            return True  # a broken configuration's folder is left out of the project index
    return excluded


def _output_plan(
    formats: Sequence[str], files: Sequence[Path]
) -> list[tuple[str, Path | None]]:
    """Pair each ``--output-format`` with the ``--output-file`` in the same position; formats
    beyond the files go to standard output, and only one may."""
    formats = list(formats) or ["full"]
    if len(files) > len(formats):
        _fail("more --output-file than --output-format: pair each file with a format")
    plan: list[tuple[str, Path | None]] = [
        (fmt, files[i] if i < len(files) else None) for i, fmt in enumerate(formats)
    ]
    if sum(1 for _, output in plan if output is None) > 1:
        _fail("only one --output-format can go to standard output: give the others an "
              "--output-file")
    return plan


def _emit(findings: list[Finding], context: ReportContext, fmt: str, output: Path | None) -> None:
    reporter = REPORTERS[fmt]
    if output is not None:
        text = reporter(findings, context, False)
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            _fail(f"cannot write {output}: {error}")
        return
    if _SILENT:
        return
    click.echo(reporter(findings, context, _COLOR), nl=False, color=_COLOR)


def _replayable(params: dict[str, Any], outputs: list[tuple[str, Path | None]]) -> bool:
    """Whether this run's output may be replayed when nothing it read has changed
    (:mod:`sampler_lint.engine.replay`): it writes nothing but its output (a `--fix` that
    rewrites a file is turned away after the run), reads neither standard input nor git,
    prints no timings, and runs no plugin (whose reads are not followed)."""
    return not (
        params["add_noqa"] or params["write_baseline"] or params["no_cache"] or params["since"]
        or params["verbose"]
        or any(output is not None for _, output in outputs)
        or registry.has_plugins()
    )


def _allow_replay(params: dict[str, Any], targets: list[Path]) -> None:
    from sampler_lint.engine.cache import DIRECTORY
    from sampler_lint.engine.config import CONFIG_FILES
    from sampler_lint.engine.discovery import LOOKED_FOR_ABOVE

    replay.allow(
        paths=tuple(map(str, targets)),
        looked_for=(*CONFIG_FILES, *LOOKED_FOR_ABOVE),
        skip=(str(params["cache_dir"]),) if params["cache_dir"] is not None else (),
        skip_names=(DIRECTORY,),
    )


def _progress() -> Any:
    if not sys.stderr.isatty():
        return None
    from sampler_lint.output.progress import TerminalProgress

    return TerminalProgress()


def _check_stdin(resolver: ConfigResolver, options: RunOptions, params: dict[str, Any]) -> None:
    from sampler_lint.engine.linter import lint_source

    name: Path = params["stdin_filename"] or Path("-")
    data = sys.stdin.buffer.read()
    try:
        settings = resolver.for_path(name if name != Path("-") else Path("."))
    except ConfigError as error:
        _fail(str(error))
    # The source is linted as the file it names: that file's configuration, per-file-ignores and
    # excludes apply (an excluded name is passed through untouched, with nothing reported).
    if name != Path("-") and settings.is_excluded(name):
        if options.fix:
            sys.stdout.buffer.write(data)
        sys.exit(EXIT_OK)
    lint = lint_options_for(settings, name, options)
    index, problems = stdin_index(name, data, resolver, lint, options)
    for message in problems.warnings:
        click.echo(f"sampler-lint: warning: {message}", err=True)
    if name.suffix == ".ipynb" and settings.options.get("notebooks", True):
        from sampler_lint.engine.notebook import lint_notebook

        result, fixed = lint_notebook(name, data, lint, index, display_name=str(name))
    else:
        result, fixed = lint_source(name, data, lint, index, display_name=str(name))
    unsafe = options.unsafe_fixes if options.unsafe_fixes is not None else settings.unsafe_fixes
    context = ReportContext(
        unsafe_fixes=bool(unsafe), fixing=options.fix, show_fixes=False,
        statistics=params["statistics"], fixed=result.fixed, fixed_by_code=result.fixed_codes,
        files_checked=1,
    )
    for message in result.errors:
        click.echo(f"sampler-lint: warning: {message}", err=True)
    if options.diff:
        click.echo(result.diff or "", nl=False)
        click.echo(diff_summary(result.fixed_codes, result.findings, bool(unsafe)), err=True)
        sys.exit(EXIT_FINDINGS if result.diff else EXIT_OK)
    if options.fix:
        # Only the fixed source goes to standard output; findings go to standard error.
        sys.stdout.buffer.write(fixed if fixed is not None else data)
        sys.stdout.flush()
        text = REPORTERS["concise"](result.findings, context, False)
        if result.findings:
            click.echo(text, nl=False, err=True)
    else:
        for fmt, output in _output_plan(params["output_format"], params["output_file"]):
            _emit(result.findings, context, fmt, output)
    code = EXIT_FINDINGS if _fails(result.findings, params) and not params["exit_zero"] \
        else EXIT_OK
    if params["exit_non_zero_on_fix"] and result.fixed:  # as for paths
        code = EXIT_FINDINGS
    sys.exit(code)


@main.command()
@click.argument("selector", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option(
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="`json`: each rule's code, name, severity, fix, options and documentation.",
)
def rule(selector: str | None, show_all: bool, output_format: str) -> None:
    """Show the documentation of a rule (by code or name), of every rule a prefix names
    (`SL2`), or list all rules."""
    if show_all or selector is None:
        rules = list(registry.all_rules())
    else:
        rules = rules_matching(selector)
        if not rules:
            _fail(f"unknown rule '{selector}' (see `sampler-lint rule --all`)")
    if output_format == "json":
        data = [rule_json(r) for r in rules]
        single = selector is not None and not show_all and registry.find_rule(selector)
        click.echo(json.dumps(data[0] if single else data, indent=2))
    elif show_all or selector is None:
        click.echo(rule_table())
    elif len(rules) == 1:
        click.echo(render_rule(rules[0]))
    else:
        click.echo(rule_table(rules))
        click.echo("")
        click.echo("\n".join(render_rule(r) for r in rules), nl=False)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def clean(paths: tuple[Path, ...]) -> None:
    """Remove the caches (`.sampler_lint_cache` folders) under PATHS (default: here), and the
    recorded runs that an unchanged `check` replays."""
    import shutil

    from sampler_lint.engine.cache import DIRECTORY

    removed = 0
    for top in paths or (Path("."),):
        for root, dirs, _ in os.walk(top):
            if DIRECTORY in dirs:
                target = Path(root) / DIRECTORY
                shutil.rmtree(target, ignore_errors=True)
                click.echo(f"Removed {target}", err=True)
                removed += 1
            dirs[:] = [d for d in dirs if d not in (DIRECTORY, ".git")]
    forgotten = replay.forget()
    if forgotten:
        click.echo(f"Removed {forgotten} recorded run(s)", err=True)
    if not removed and not forgotten:
        click.echo("No cache found.", err=True)


@main.command()
def server() -> None:
    """Run the language server (LSP) over standard input and output, for editors.

    Needs the `server` extra: pip install "sampler-lint[server]"."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as error:
        _fail(
            f"`sampler-lint server` needs {error.name or 'pygls'}, which is not installed; "
            'install the server extra: pip install "sampler-lint[server]"'
        )
    from sampler_lint.server.lsp import start

    start()
