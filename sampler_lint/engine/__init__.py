"""How a run works: find the files (``discovery``), resolve their settings (``config``), load the
rules (``registry``), survey and index the project (``survey``, ``runner``), lint each file in one
traversal (``linter``, ``walk``, ``noqa``, ``positions``), fix it (``fixes``, ``orphans``,
``writer``) and remember results (``cache``). ``findings`` holds what a run produces. Knows no rule
by name and never imports the output.
"""
