"""Model backends behind the :class:`~skillwire.core.chat.ChatModel` protocol.

``offline`` (the embedded default), ``openai`` (any OpenAI-compatible server) and
``anthropic``. The SDK backends import their SDK only when a model is built.
"""

from skillwire.models.offline import OfflineModel
from skillwire.models.registry import ModelSettings, build_model, probe_model

__all__ = ["ModelSettings", "OfflineModel", "build_model", "probe_model"]
