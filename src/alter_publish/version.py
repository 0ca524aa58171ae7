"""The version of alter-publish (one place)."""

__version__ = "0.1.0"
