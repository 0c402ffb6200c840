# What type checkers see of sampler_lint.analysis.lazy_libcst: libcst itself (the module
# imports it on first use; see lazy_libcst.py).
from libcst import *  # noqa: F403
from libcst import metadata as metadata
