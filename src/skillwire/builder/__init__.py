"""Guided authoring: an interview that writes a skill with its author, every answer
checked by the real loader at once (``skillwire new`` / ``skillwire edit``).

The draft (:class:`Draft`) is the skill's YAML tree, read and written round-trip so an
existing file keeps its comments and order; the interview (:func:`interview` over a
:class:`Session`) asks phase by phase through a :class:`Prompter`; tools come from typed
Python functions (:func:`tools_from_python`), an OpenAPI document
(:func:`tools_from_openapi`) or an MCP server's listed tools (:func:`tools_from_mcp`,
which the caller lists), each proposed a policy from what it does
(:func:`propose_policy`); with a model, :func:`draft_with_model` drafts every section
first. :func:`add_dry_run_tests` puts the skill's generated dry-run scenarios
(:func:`generate_scenarios`) in its ``tests:``, which ``skillwire test`` runs. See
docs/authoring.md.
"""

from skillwire.builder.authoring import (
    PHASES,
    add_dry_run_tests,
    add_tools,
    finish,
    interview,
    open_draft,
)
from skillwire.builder.condition_view import ConditionView, view_condition
from skillwire.builder.draft import Draft, DraftCheck
from skillwire.builder.drafting import apply_model_draft, draft_with_model
from skillwire.builder.interview import (
    DefaultsPrompter,
    Phase,
    PhaseResult,
    Prompter,
    Question,
    Session,
)
from skillwire.builder.mcp_tools import tools_from_mcp
from skillwire.builder.openapi_tools import tools_from_openapi
from skillwire.builder.python_tools import ImportedTools, tools_from_python
from skillwire.builder.scenarios import GeneratedScenarios, generate_scenarios
from skillwire.builder.summary import summarize
from skillwire.builder.tool_effects import (
    Effect,
    PolicyChoice,
    ToolHints,
    classify_tool,
    propose_policy,
)

__all__ = [
    "PHASES",
    "ConditionView",
    "DefaultsPrompter",
    "Draft",
    "DraftCheck",
    "Effect",
    "GeneratedScenarios",
    "ImportedTools",
    "Phase",
    "PhaseResult",
    "PolicyChoice",
    "Prompter",
    "Question",
    "Session",
    "ToolHints",
    "add_dry_run_tests",
    "add_tools",
    "apply_model_draft",
    "classify_tool",
    "draft_with_model",
    "finish",
    "generate_scenarios",
    "interview",
    "open_draft",
    "propose_policy",
    "summarize",
    "tools_from_mcp",
    "tools_from_openapi",
    "tools_from_python",
    "view_condition",
]
