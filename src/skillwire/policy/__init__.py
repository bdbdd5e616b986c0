"""The policy engine: the guardrail compiler, the validators and the pre-tool gate.

The gate needs no model and no job: :meth:`Gate.for_skill` then :meth:`Gate.check`.
"""

from skillwire.policy.access import AccessPolicy, BasePolicy, apply_plan, load_base_policy
from skillwire.policy.call import ApprovalGrant, ToolRun
from skillwire.policy.compiler import compile_policy
from skillwire.policy.decisions import (
    Allow,
    Block,
    Decision,
    NeedApproval,
    NeedInput,
    Reason,
    ReasonCode,
)
from skillwire.policy.gate import Gate, PreToolGate
from skillwire.policy.gate_input import GateInputError
from skillwire.policy.json_schema import schema_validator
from skillwire.policy.rules import CompiledPolicy, CompiledRule, RuleKind
from skillwire.policy.workflows import SubGoal, workflows_to_subgoals

__all__ = [
    "AccessPolicy",
    "Allow",
    "ApprovalGrant",
    "BasePolicy",
    "Block",
    "CompiledPolicy",
    "CompiledRule",
    "Decision",
    "Gate",
    "GateInputError",
    "NeedApproval",
    "NeedInput",
    "PreToolGate",
    "Reason",
    "ReasonCode",
    "RuleKind",
    "SubGoal",
    "ToolRun",
    "apply_plan",
    "compile_policy",
    "load_base_policy",
    "schema_validator",
    "workflows_to_subgoals",
]
