"""Command lines and build glue: ``python -m gated_attention.tools.<name>``.

book        execute the chapters with papermill, write plain notebooks
bench       time the training engine (``make bench``)
record      run an experiment in a profile and ship it as a recorded run
sphinxext   the Sphinx extension of the rendered book
"""
