"""Finding the rules: every module of ``sampler_lint.rules`` plus the entry-point group
``sampler_lint.rules``. There is no hand-kept list, so adding a rule is adding a module."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import pkgutil
import re
import sys
from collections.abc import Iterable
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any

from sampler_lint.rule import Rule

ENTRY_POINT_GROUP = "sampler_lint.rules"
_CODE = re.compile(r"^[A-Z]+[0-9]+$")


class SelectorError(ValueError):
    pass


def _rules_in_module(module: object) -> list[type[Rule]]:
    found = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Rule) and obj is not Rule and getattr(obj, "code", None):
            if obj.__module__ == getattr(module, "__name__", None):
                found.append(obj)
    return found


def checkout_rules_init() -> Path:
    """``rules/__init__.py`` of the source checkout this module sits in
    (``<checkout>/sampler_lint/engine/registry.py``)."""
    return Path(__file__).resolve().parents[2] / "rules" / "__init__.py"


def _rules_package() -> ModuleType:
    """``sampler_lint.rules``: installed, the wheel maps the top-level ``rules/`` directory there.

    Run from a source checkout (``python -m pytest`` puts the checkout first on ``sys.path``), the
    package ``sampler_lint`` is the checkout's, which has no ``rules`` inside it; the rules then
    come from the checkout's ``rules/``, so a checkout and an install see the same rules.
    """
    try:
        return importlib.import_module("sampler_lint.rules")
    except ModuleNotFoundError as error:
        if error.name != "sampler_lint.rules":
            raise
        init = checkout_rules_init()
        spec = spec_from_file_location(
            "sampler_lint.rules", init, submodule_search_locations=[str(init.parent)]
        )
        if not init.is_file() or spec is None or spec.loader is None:
            raise
    module = module_from_spec(spec)
    sys.modules["sampler_lint.rules"] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def code_stamp() -> str:
    """A digest of this build's code, the tool's modules and its rules': what the cache keeps is
    read only by the build that wrote it, not by another of the same version (a checkout between
    commits, an install from another commit), as what a survey keeps changes shape between them.
    The files' contents, not their times, so a fresh install of one build in CI reads the cache
    an earlier install of it wrote. About a megabyte, read once per run that uses a cache."""
    folders = [Path(__file__).resolve().parents[1]]
    folders += [Path(path).resolve() for path in _rules_package().__path__]
    stamp = hashlib.blake2b(digest_size=16)
    seen: set[Path] = set()
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if path in seen:
                continue  # an install keeps the rules inside the package
            seen.add(path)
            stamp.update(path.relative_to(folder).as_posix().encode() + b"\0")
            stamp.update(path.read_bytes() + b"\0")
    return stamp.hexdigest()


@functools.cache
def all_rules() -> tuple[type[Rule], ...]:
    package = _rules_package()
    rules: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for rule in _rules_in_module(module):
            rules[rule.code] = rule
    for entry in _plugin_entry_points():
        loaded = entry.load()
        candidates = [loaded] if inspect.isclass(loaded) else _rules_in_module(loaded)
        for candidate in candidates:
            if inspect.isclass(candidate) and issubclass(candidate, Rule):
                rules.setdefault(candidate.code, candidate)
    return tuple(sorted(rules.values(), key=lambda r: r.code))


def has_plugins() -> bool:
    """Whether a rule comes from a plugin rather than the rules package."""
    ours = _rules_package().__name__ + "."
    return any(not rule.__module__.startswith(ours) for rule in all_rules())


def _plugin_entry_points() -> list[Any]:
    """The entry points of :data:`ENTRY_POINT_GROUP`. Importing ``importlib.metadata`` costs
    about 25 ms (it brings the ``email`` package) and asking it reads every installed
    distribution: a tenth of every run's start-up, for plugins most environments do not have.
    So the distributions' ``entry_points.txt`` files are looked through first, and
    ``importlib.metadata`` is asked only when one names the group, or when that look cannot be
    sure (see :func:`_surely_no_plugins`)."""
    if _surely_no_plugins():
        return []
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def _surely_no_plugins() -> bool:
    """No distribution importlib.metadata would find declares :data:`ENTRY_POINT_GROUP`: every
    ``sys.path`` entry is a folder (or absent), no ``*.dist-info`` / ``*.egg-info`` folder in
    them has an ``entry_points.txt`` naming the group, and no finder of distributions other
    than importlib's own is installed. Anything else (a zip or an egg on the path, a file that
    cannot be read) answers ``False``: importlib.metadata decides."""
    from importlib.machinery import PathFinder

    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return False
    for entry in sys.path:
        if not isinstance(entry, str):
            return False  # a Path put there by hand: importlib.metadata copes with it
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return False  # a zip or an egg file: importlib.metadata reads those
            continue
        if folder.lower().endswith(".egg"):
            return False
        try:
            names = os.listdir(folder)
        except OSError:
            return False
        for name in names:
            # importlib.metadata matches these suffixes in any case.
            if not name.lower().endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(
                    os.path.join(folder, name, "entry_points.txt"), encoding="utf-8",
                    errors="replace",
                ) as declared:
                    if ENTRY_POINT_GROUP in declared.read():
                        return False
            except (FileNotFoundError, NotADirectoryError):
                continue  # no entry points (an ``.egg-info`` file holds none)
            except OSError:
                return False
    return True


def find_rule(selector: str) -> type[Rule] | None:
    for rule in all_rules():
        if selector.upper() == rule.code or selector.lower() == rule.name:
            return rule
    return None


def expand_selector(selector: str) -> set[str]:
    """``ALL``, a code, a name, or a code prefix (``SL1``) -> the codes it names."""
    token = selector.strip()
    if not token:
        return set()
    if token.upper() == "ALL":
        return {r.code for r in all_rules()}
    rule = find_rule(token)
    if rule is not None:
        return {rule.code}
    matched = {r.code for r in all_rules() if r.code.startswith(token.upper())}
    if matched and re.fullmatch(r"[A-Za-z]+[0-9]*", token):
        return matched
    raise SelectorError(f"unknown rule selector '{selector}'")


def expand_selectors(selectors: Iterable[str]) -> set[str]:
    codes: set[str] = set()
    for selector in selectors:
        codes |= expand_selector(selector)
    return codes


def default_codes() -> set[str]:
    return {r.code for r in all_rules() if r.default_enabled}


def rules_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


def looks_like_code(text: str) -> bool:
    return bool(_CODE.match(text))
