"""The shared vocabulary of RULES.md: what counts as a world size, a rank or a seed.

The name lists extend from configuration (``world-size-names``, ``rank-names``, ``seed-names``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

WORLD_SIZE_NAMES = (
    "world_size",
    "num_replicas",
    "nprocs",
    "num_processes",
    "num_gpus",
    "ngpus",
    "n_gpus",
    "num_devices",
    "n_devices",
    "ndevices",
)
WORLD_SIZE_CALLS = ("get_world_size",)
RANK_NAMES = ("rank", "local_rank", "global_rank", "process_index", "proc_id")
RANK_CALLS = ("get_rank", "get_local_rank")
SEED_NAMES = ("seed",)
# Names that look like seeds but differ per worker, rank or device.
SEED_EXCLUDED_PARTS = ("worker", "rank", "local", "proc", "node", "device", "gpu")

ENGINE_OPTION_KEYS = ("world-size-names", "rank-names", "seed-names")


@dataclass(frozen=True)
class Vocabulary:
    world_size_names: frozenset[str] = field(default_factory=lambda: frozenset(WORLD_SIZE_NAMES))
    rank_names: frozenset[str] = field(default_factory=lambda: frozenset(RANK_NAMES))
    seed_names: frozenset[str] = field(default_factory=lambda: frozenset(SEED_NAMES))

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Vocabulary:
        return cls(
            frozenset(WORLD_SIZE_NAMES) | frozenset(options.get("world-size-names", ())),
            frozenset(RANK_NAMES) | frozenset(options.get("rank-names", ())),
            frozenset(SEED_NAMES) | frozenset(options.get("seed-names", ())),
        )

    def tokens(self, placeholder: str) -> list[str]:
        """The words a pre-filter placeholder (``{rank}``, ``{world_size}``, ``{seed}``) stands
        for: every name and call of that vocabulary, so no finding can hide behind it."""
        if placeholder == "{rank}":
            return sorted(self.rank_names) + list(RANK_CALLS)
        if placeholder == "{world_size}":
            return sorted(self.world_size_names) + list(WORLD_SIZE_CALLS) + ["WORLD_SIZE"]
        if placeholder == "{seed}":
            return [*sorted(self.seed_names), "seed", "SEED"]
        raise ValueError(f"unknown pre-filter placeholder {placeholder}")

    def is_world_size_name(self, dotted: str) -> bool:
        """``world_size``, ``args.world_size``, ``accelerator.num_processes``."""
        return dotted.rsplit(".", 1)[-1] in self.world_size_names

    def is_rank_name(self, dotted: str) -> bool:
        return dotted.rsplit(".", 1)[-1] in self.rank_names

    def is_seed_name(self, name: str) -> bool:
        """``seed``, ``base_seed``, ``seed_value``; never ``worker_seed`` or ``rank_seed``."""
        last = name.rsplit(".", 1)[-1].lower()
        if any(part in last for part in SEED_EXCLUDED_PARTS):
            return False
        if last in self.seed_names:
            return True
        return bool(re.fullmatch(r"(\w+_)?seed(_\w+)?", last))


# ------------------------------------------------------------------------------------------------
# Local ranks (SL404): the index of a process on its own machine, not in the whole job.

LOCAL_RANK_NAMES = ("local_rank", "LOCAL_RANK", "local_process_index", "localrank")
# hvd.local_rank(), detectron2's comm.get_local_rank(); accelerate's
# PartialState().local_process_index is an attribute (a name above)
LOCAL_RANK_CALLS = ("local_rank", "get_local_rank")
# What launchers put in the environment: torchrun, SLURM, Open MPI, MPICH / Intel MPI, MVAPICH.
LOCAL_RANK_ENV = (
    "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
)
# Every spelling above holds one of these (for a rule's text pre-filter).
LOCAL_RANK_TOKENS = ("local_rank", "LOCAL_RANK", "local_process_index", "localrank", "LOCALID",
                     "LOCALRANK")
