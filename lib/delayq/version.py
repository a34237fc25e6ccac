"""delayq's version: a leaf module (nothing imports back up to the package for it)."""

__version__ = "0.2.0"
