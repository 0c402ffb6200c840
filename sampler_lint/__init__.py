"""sampler-lint: find and fix the silent bugs of distributed data loading in PyTorch code."""

__version__ = "0.1.0"
