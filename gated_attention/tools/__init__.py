"""Command lines and build glue: ``python -m gated_attention.tools.<name>``.

cli             ``python -m gated_attention`` (click): list the experiments, run one with overrides
  overrides       a --set value read as its field's declared type, a config with it replaced
book            execute the chapters with papermill, write plain notebooks
record          run an experiment in a profile and ship it as a recorded run
quick_runs      the quick runs that ship recorded: is their training code unchanged? re-record
sphinxext       the Sphinx extension of the rendered book
launch_links    where the book's launch buttons go (Binder, Colab)

What measures or plans hardware (the bench, the GPU plan, the campaign) is the repository's
``lab/``, and the lint hooks are its ``dev/``: neither is part of the package.
"""
