#!/usr/bin/env python3
"""Time sampler-lint against its peers over real repositories, in one run, alternating.

    python benchmarks/bench.py /path/to/repo1 /path/to/repo2 ... [--runs 5] [--peers-on REPO]

Over all repositories together, alternating run by run: sampler-lint cold (``--no-cache``),
sampler-lint warm (a second run with the cache, once the cache exists), and ``ruff check --select
ALL --no-cache``. Over one mid-sized repository (``--peers-on``, default the first): ``fixit lint``,
``torchfix --select ALL`` and a bare libcst parse of every file, which take minutes per thousand
files. Prints medians, files per second, peak memory (of each command's largest process, from
``wait4``) and the ratios. With ``--small-files N`` (default 40,000; 0 skips it), it also times a
cold run over N small files it writes to a temporary folder (half empty, half two unrelated
lines). It downloads nothing: install the peers yourself (``pip install ruff fixit torchfix``); a
peer that is not installed is skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def uncompiled_warning() -> str | None:
    """Why every timed run would compile the tool's own modules again: Python may not write
    their bytecode (``PYTHONDONTWRITEBYTECODE``) and none is cached beside them (an editable
    install in such a shell). That is 0.1 s or more per run, which no installed copy pays
    (pip compiles it on install), and it made one session's start-up look 7x slower."""
    if not sys.flags.dont_write_bytecode:
        return None
    import importlib.util

    spec = importlib.util.find_spec("sampler_lint.cli")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    if os.path.exists(importlib.util.cache_from_source(spec.origin)):
        return None
    return (
        "warning: PYTHONDONTWRITEBYTECODE is set and sampler-lint's modules have no cached "
        "bytecode, so every run compiles them: unset it for one run of sampler-lint, or "
        f"`{sys.executable} -m compileall -q {Path(spec.origin).parent.parent}`"
    )


def count_files(repos: list[Path]) -> int:
    return sum(1 for repo in repos for _ in repo.rglob("*.py"))


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of this command's largest process (``wait4``'s rusage of
    the child: its own peak, or its largest worker's, whichever is larger)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0  # reaped above
    return wall, usage.ru_maxrss / 1024


def bare_parse_command(repo: Path) -> list[str]:
    code = (
        "import sys, pathlib, libcst\n"
        "for p in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
        "    try:\n"
        "        libcst.parse_module(p.read_bytes())\n"
        "    except Exception:\n"
        "        pass\n"
    )
    return [sys.executable, "-c", code, str(repo)]


def small_files(count: int, lint: list[str], runs: int) -> None:
    """A cold run over ``count`` small files: what start-up, discovery and the pre-filter cost
    when there is nothing to find."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for number in range(count):
            package = root / f"pkg{number // 200}"
            package.mkdir(exist_ok=True)
            text = "" if number % 2 == 0 else f"import os\nvalue = {number}\n"
            (package / f"module_{number % 200}.py").write_text(text)
        command = [*lint, "--no-cache", str(root)]
        results = [timed(command) for _ in range(runs)]
    walls = [wall for wall, _ in results]
    print(f"{count} small files, {runs} runs (median)")
    print(f"  sampler-lint cold      {statistics.median(walls):8.2f} s"
          f"  (min {min(walls):.2f}, max {max(walls):.2f})"
          f"  peak {max(peak for _, peak in results):.0f} MiB")


def median_of(command: list[str], runs: int, cwd: Path | None = None) -> float:
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def per_tree(repos: list[Path], lint: list[str], runs: int) -> None:
    """Each tree alone against ruff ALL in the same run: cold (alternating with ruff), then warm
    (the cache filled by a first run, nothing changed: from the third run on, the recorded run
    is replayed, as a user's second ``check`` is); the peak memory of the cold run."""
    if not shutil.which("ruff"):
        return
    print(f"each tree alone, {runs} runs (medians)")
    for repo in repos:
        ours: list[float] = []
        peaks: list[float] = []
        theirs: list[float] = []
        for _ in range(runs):
            wall, peak = timed([*lint, "--no-cache", str(repo)])
            ours.append(wall)
            peaks.append(peak)
            theirs.append(timed(["ruff", "check", "--select", "ALL", "--no-cache", "--exit-zero",
                                 "--quiet", str(repo)])[0])
        with tempfile.TemporaryDirectory() as cache:
            warm_command = [*lint, "--cache-dir", cache, str(repo)]
            timed(warm_command)
            warm = statistics.median(timed(warm_command)[0] for _ in range(runs))
        mine, ruff = statistics.median(ours), statistics.median(theirs)
        print(f"  {repo.name:<22} {count_files([repo]):6} files  cold {mine:6.2f} s"
              f"  ruff ALL {ruff:6.2f} s  ratio {mine / ruff:4.2f}"
              f"  warm {warm:5.2f} s ({warm / ruff:4.2f})  peak {max(peaks):4.0f} MiB")


def scenarios(repo: Path, one_file: str, lint: list[str], runs: int) -> None:
    """Over a copy of ``repo``: one file named alone, cold, against the tool's own start-up
    (``--version``); a warm run (a replay, nothing having changed); a warm run after one file
    changed (through the cache: the change keeps it from being replayed); ``--fix`` over the
    tree once nothing is left to fix, against a warm ``check``."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / repo.name
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        (tree / ".git").mkdir(exist_ok=True)  # the project root, as in the checkout
        # In the copy, as the runs below: run elsewhere, `-m` may import another checkout.
        start_up = median_of([sys.executable, "-m", "sampler_lint", "--version"], runs, cwd=tree)
        alone = median_of([*lint, "--no-cache", one_file], runs, cwd=tree)
        print(f"over {repo.name} ({count_files([tree])} files), {runs} runs (medians)")
        print(f"  start-up (--version)      {start_up:7.2f} s")
        print(f"  one file, cold ({one_file}) {alone:7.2f} s  {alone / start_up:.2f}x start-up")
        subprocess.run([*lint, "--fix", "."], cwd=tree, capture_output=True, check=False)
        warm = median_of([*lint, "."], runs, cwd=tree)
        changed = tree / one_file
        original = changed.read_bytes()
        changes = []
        for number in range(runs):
            changed.write_bytes(original + f"\n# change {number}\n".encode())
            start = time.perf_counter()
            subprocess.run([*lint, "."], cwd=tree, capture_output=True, check=False)
            changes.append(time.perf_counter() - start)
        changed.write_bytes(original)
        subprocess.run([*lint, "."], cwd=tree, capture_output=True, check=False)
        fix = median_of([*lint, "--fix", "."], runs, cwd=tree)
        print(f"  warm, nothing changed     {warm:7.2f} s")
        print(f"  warm, one file changed    {statistics.median(changes):7.2f} s")
        print(f"  --fix, nothing to fix     {fix:7.2f} s  {fix / warm:.2f}x warm check")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peers-on", type=Path, default=None)
    parser.add_argument("--peer-runs", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--small-files", type=int, default=40_000)
    parser.add_argument("--skip-peers", action="store_true", help="no fixit/torchfix/libcst")
    parser.add_argument("--per-tree", action="store_true", help="each tree alone vs ruff ALL")
    parser.add_argument("--one-file", metavar="FILE", default=None,
                        help="a file of the first repository (relative to it): one-file cold, "
                             "warm one-change and --fix-on-a-clean-tree runs over a copy")
    args = parser.parse_args()

    repos = [r.resolve() for r in args.repos]
    warning = uncompiled_warning()
    if warning:
        print(warning, file=sys.stderr)
    files = count_files(repos)
    lint = [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--exit-zero",
            "--output-format", "concise", "--jobs", str(args.jobs)]
    commands: dict[str, list[str]] = {
        "sampler-lint cold": [*lint, "--no-cache", *map(str, repos)],
        "sampler-lint warm": [*lint, *map(str, repos)],
    }
    if shutil.which("ruff"):
        commands["ruff --select ALL"] = [
            "ruff", "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet",
            *map(str, repos),
        ]
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, float] = {}
    # Warm-up, which fills the cache, and a check that sampler-lint runs at all with this Python
    # (a broken command would time its own error message).
    warm_up = subprocess.run(commands["sampler-lint warm"], capture_output=True, text=True,
                             check=False)
    if warm_up.returncode != 0:
        sys.exit(f"sampler-lint failed with {sys.executable}:\n{warm_up.stderr[-2000:]}")
    for _ in range(args.runs):
        for name, command in commands.items():
            wall, peak = timed(command)
            times[name].append(wall)
            peaks[name] = max(peaks.get(name, 0.0), peak)

    print(f"{len(repos)} repositories, {files} Python files, {args.runs} runs each (medians)")
    ruff_times = times.get("ruff --select ALL")
    reference = statistics.median(ruff_times) if ruff_times else None
    for name, values in times.items():
        median = statistics.median(values)
        ratio = f"  ratio to ruff {median / reference:.2f}" if reference else ""
        print(f"  {name:<22} {median:8.2f} s  {files / median:9.0f} files/s"
              f"  (min {min(values):.2f}, max {max(values):.2f}){ratio}"
              f"  peak {peaks[name]:.0f} MiB")

    if args.per_tree:
        per_tree(repos, lint, args.runs)
    if args.one_file:
        scenarios(repos[0], args.one_file, lint, args.runs)
    if args.small_files:
        small_files(args.small_files, lint, args.runs)
    if args.skip_peers:
        return 0
    peer_repo = (args.peers_on or repos[0]).resolve()
    peer_files = count_files([peer_repo])
    peers: dict[str, list[str]] = {"libcst bare parse": bare_parse_command(peer_repo)}
    if shutil.which("fixit"):
        peers["fixit lint"] = ["fixit", "lint", str(peer_repo)]
    if shutil.which("torchfix"):
        peers["torchfix --select ALL"] = ["torchfix", "--select", "ALL", str(peer_repo)]
    peers["sampler-lint cold"] = [*lint, "--no-cache", str(peer_repo)]
    print(f"peers over {peer_repo.name}: {peer_files} Python files, {args.peer_runs} run(s)")
    results = {}
    for name, command in peers.items():
        walls = [timed(command)[0] for _ in range(args.peer_runs)]
        results[name] = statistics.median(walls)
    ours = results["sampler-lint cold"]
    for name, median in results.items():
        print(f"  {name:<22} {median:8.2f} s  {peer_files / median:9.0f} files/s"
              f"  {median / ours:6.1f}x sampler-lint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
