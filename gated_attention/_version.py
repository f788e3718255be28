"""The package's version, in a module of its own at the bottom of the wings: a wing that records
it (the results cache, the sweep, the execution status) imports it from here, never from the
package's ``__init__``, which sits above every wing. ``pyproject.toml`` states the same number."""

__version__ = "0.1.0"
