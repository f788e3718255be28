"""The package's version (``pyproject.toml`` states the same number): a wing that records it
imports it from here, never from the package's ``__init__``, which sits above every wing."""

__version__ = "0.1.0"
