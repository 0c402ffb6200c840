"""What sampler-lint knows about PyTorch training code, shared by the rules.

Foundation (imports nothing else of sampler-lint, the rule contract builds on it): ``tree``
(reading libcst trees), ``imports``, ``vocabulary``, ``index`` (the project index and its fact
collectors), ``syntax_summary`` (the ``ast`` pre-filter summary), ``lazy_libcst`` (libcst,
imported on first use). Facts (import the foundation and
``sampler_lint.rule``): ``matching``, ``loaders``, ``sampler_family``, ``frameworks``,
``batch_samplers``, ``seeds``, ``seed_facts``, ``sharding``, ``ranks``, ``attribute_facts``,
``must_assign``, ``leftovers``, ``realign``. Never imports the engine, the output or the rules.
"""
