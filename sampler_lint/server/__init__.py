"""The language server for editors (``sampler-lint server``): the LSP front (``lsp``), a warm
project index that re-surveys one file at a time (``session``) and the code actions
(``quick_fixes``). Needs the ``server`` extra (pygls, lsprotocol)."""
