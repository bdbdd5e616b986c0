"""Governed simulations (spec 002): experiments, agents x steps, the model adapter, the
validator chain on skillwire's gate, audit, replay and report (``docs/sim.md``).

Load an experiment with :func:`load_experiment` (raises
:class:`~skillwire.core.errors.ExperimentError` with every error, each with file and
line) or :func:`read_experiment` (never raises for its content); run it with
:func:`run_experiment` and a :class:`Proposer` (:class:`OfflineProposer`,
:class:`ScriptedProposer`, :class:`ChatProposer` over any ``ChatModel``); rerun it with
:func:`replay_run`.
"""

from skillwire.sim.adapter import Proposal, parse_output, repair_json, retry_prompt
from skillwire.sim.definitions import Experiment
from skillwire.sim.governance import AgentHistory, Governance, RuleResult
from skillwire.sim.loading import ExperimentCheck, is_experiment, load_experiment, read_experiment
from skillwire.sim.proposers import (
    ChatProposer,
    DecisionRequest,
    OfflineProposer,
    Proposer,
    ScriptedProposer,
)
from skillwire.sim.runner import RunSettings, Simulation
from skillwire.sim.runs import ReplayOutcome, RunResult, replay_run, run_experiment

__all__ = [
    "AgentHistory",
    "ChatProposer",
    "DecisionRequest",
    "Experiment",
    "ExperimentCheck",
    "Governance",
    "OfflineProposer",
    "Proposal",
    "Proposer",
    "ReplayOutcome",
    "RuleResult",
    "RunResult",
    "RunSettings",
    "ScriptedProposer",
    "Simulation",
    "is_experiment",
    "load_experiment",
    "parse_output",
    "read_experiment",
    "repair_json",
    "replay_run",
    "retry_prompt",
    "run_experiment",
]
