"""The HTTP API and the web page of ``skillwire serve`` (FastAPI, Jinja2, vendored htmx).

Only the CLI imports this package. See docs/server.md.
"""

from skillwire.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
