"""skillwire: run LLM agents governed by declarative skills.

The public surface is small and imported lazily so that ``skillwire --help`` starts
fast: load a skill with :func:`skillwire.skills.load_skill` (every skill under some
paths, with a report, with :func:`skillwire.skills.load_paths`), check a tool call with
:class:`skillwire.policy.Gate`, run jobs with :class:`skillwire.engine.Runtime`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
