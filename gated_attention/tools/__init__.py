"""Command lines and build glue: ``python -m gated_attention.tools.<name>``.

cli             ``python -m gated_attention`` (click): list the experiments, run one with overrides
  overrides       a --set value read as its field's declared type, a config with it replaced
book            execute the chapters with papermill, write plain notebooks
record          run an experiment in a profile and ship it as a recorded run

What measures or plans hardware (the bench, the GPU plan, the campaign) is the repository's
``lab/``; the lint hooks and the re-recording of the shipped quick runs are its ``dev/``; the
Sphinx extensions of the rendered book (launch buttons, the stylesheet) are ``book/_ext/``. None
is part of the package.
"""
