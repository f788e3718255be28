"""Command lines: ``python -m gated_attention.tools.<name>``.

cli             ``python -m gated_attention`` (click): list the experiments, run one with overrides
  overrides       a --set value read as its field's declared type, a config with it replaced

Not in the package: the repository's ``lab/`` (the bench, the GPU plan, the campaign), ``dev/``
(lint hooks, recording runs into the package, re-recording the shipped quick runs) and
``book/_ext/`` (the book's executor and its Sphinx extensions).
"""
