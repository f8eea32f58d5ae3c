"""The version of the pathrag distribution, written only here (pyproject.toml reads it from this file)."""

__version__ = "0.1.0"
