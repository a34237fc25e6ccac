"""An application module that re-exports a job defined in another of its modules (as a package's __init__ does):
naming it here, 'examples.reexport:noop', is accepted."""

from examples.shop import noop  # noqa: F401
