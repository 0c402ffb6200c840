"""The rules of sampler-lint, one module per rule (installed as ``sampler_lint.rules``)."""
