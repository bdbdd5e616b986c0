"""Job and event persistence. ``SQLiteJobStore`` is the embedded default."""

from skillwire.core.errors import JobStateTooNewError, SchemaTooNewError
from skillwire.store.migrations import SCHEMA_VERSION
from skillwire.store.sqlite import SQLiteJobStore

__all__ = ["SCHEMA_VERSION", "JobStateTooNewError", "SQLiteJobStore", "SchemaTooNewError"]
