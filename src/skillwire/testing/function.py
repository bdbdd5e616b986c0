"""A :class:`~skillwire.core.chat.ChatModel` backed by a function the test writes.

Where a script cannot say it (a reply that depends on the request, a model that fails on
the third call), a test passes a function instead::

    def model(request: ChatRequest) -> ChatResponse:
        if request.stage == "gate":
            raise ModelUnavailableError("gate model down")
        return ChatResponse(text="ok")

    engine_model = FunctionModel(model)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import replace

from skillwire.core.chat import ChatRequest, ChatResponse

__all__ = ["ChatFunction", "FunctionModel"]

ChatFunction = Callable[[ChatRequest], ChatResponse | Awaitable[ChatResponse]]
"""A function answering one call, plain or ``async``."""


class FunctionModel:
    """A :class:`~skillwire.core.chat.ChatModel` that calls ``function`` for every request.

    The function may be plain or ``async``; a plain one runs in the caller's thread (no
    executor), so a test stays deterministic. Whatever it raises reaches the caller
    unchanged: raise :class:`~skillwire.core.chat.ModelError` subclasses to act out model
    failures. A response with no ``model`` gets this model's name. Every request is kept in
    :attr:`calls`.
    """

    def __init__(self, function: ChatFunction, *, name: str | None = None) -> None:
        self._function = function
        label = getattr(function, "__name__", type(function).__name__)
        self._name = name or f"function:{label}"
        self.calls: list[ChatRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """``function:<function name>`` unless a ``name`` was given."""
        return self._name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Call the function with ``request`` and return its response."""
        self.calls.append(request)
        result = self._function(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ChatResponse):
            raise TypeError(f"{self._name} returned {type(result).__name__}, not a ChatResponse")
        return result if result.model else replace(result, model=self._name)

    async def aclose(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"<FunctionModel {self._name} {len(self.calls)} calls>"
