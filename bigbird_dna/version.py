"""The package's one version string: ``pyproject.toml`` reads it, every CLI's ``--version`` prints it,
and every output file that records its maker quotes it. A module of its own, so that a CLI learns
the version without importing the package root (whose ``BigBirdDNA`` sits above every layer)."""

__version__ = "0.1.0"
