"""Governed simulations (spec 002): experiments, agents x steps, audit, replay, report."""

from skillwire.sim.definitions import Experiment
from skillwire.sim.loading import ExperimentCheck, is_experiment, load_experiment, read_experiment

__all__ = ["Experiment", "ExperimentCheck", "is_experiment", "load_experiment", "read_experiment"]
