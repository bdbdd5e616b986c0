"""Job and event persistence. ``SQLiteJobStore`` is the embedded default."""

from skillwire.store.migrations import SCHEMA_VERSION, SchemaTooNewError
from skillwire.store.sqlite import JobStateTooNewError, SQLiteJobStore

__all__ = ["SCHEMA_VERSION", "JobStateTooNewError", "SQLiteJobStore", "SchemaTooNewError"]
