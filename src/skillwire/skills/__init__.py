"""Skill definitions: the model, both loaders, the load report, JSON Schemas.

Load skills with :func:`load_paths` (many, with a report; never raises for a bad
skill) or :func:`load_skill` (exactly one; raises :class:`~skillwire.core.SkillError`).
"""

from skillwire.skills.base_policy import BaseApproval, BasePolicy, load_base_policy
from skillwire.skills.loading import LoadResult, discover, load_paths, load_skill
from skillwire.skills.model import (
    DomainFile,
    EngineConfig,
    FinalizationGateConfig,
    OutputContract,
    RequiredInput,
    Skill,
    SkillManifest,
)
from skillwire.skills.model_fields import Entity, FieldSpec, Intent, Intents, OutOfDomain
from skillwire.skills.model_package import ToolAccessPlan
from skillwire.skills.model_policy import (
    Approval,
    Guardrails,
    Policy,
    StructuredRule,
    Workflow,
    WorkflowStep,
)
from skillwire.skills.model_tests import DryRunExpect, DryRunPause, DryRunTest
from skillwire.skills.model_tools import OnceOnly, PolicyCondition, Tool, ToolInput, ToolPolicy
from skillwire.skills.prose import semantic_escalations
from skillwire.skills.report import LoadReport, SkillReport
from skillwire.skills.suite import CommandCase, DryRunCase, ManualCase, TestCase, cases_of

__all__ = [
    "Approval",
    "BaseApproval",
    "BasePolicy",
    "CommandCase",
    "DomainFile",
    "DryRunCase",
    "DryRunExpect",
    "DryRunPause",
    "DryRunTest",
    "EngineConfig",
    "Entity",
    "FieldSpec",
    "FinalizationGateConfig",
    "Guardrails",
    "Intent",
    "Intents",
    "LoadReport",
    "LoadResult",
    "ManualCase",
    "OnceOnly",
    "OutOfDomain",
    "OutputContract",
    "Policy",
    "PolicyCondition",
    "RequiredInput",
    "Skill",
    "SkillManifest",
    "SkillReport",
    "StructuredRule",
    "TestCase",
    "Tool",
    "ToolAccessPlan",
    "ToolInput",
    "ToolPolicy",
    "Workflow",
    "WorkflowStep",
    "cases_of",
    "discover",
    "load_base_policy",
    "load_paths",
    "load_skill",
    "semantic_escalations",
]
