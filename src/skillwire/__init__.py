"""skillwire: run LLM agents governed by declarative skills.

The public surface is small and imported lazily so that ``skillwire --help`` starts
fast: load skills with :func:`skillwire.skills.load_path`, check a tool call with
:class:`skillwire.policy.Gate`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
