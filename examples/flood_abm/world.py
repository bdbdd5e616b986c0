"""The flood world of the reference (rule-based) model, as skillwire world hooks.

The dynamics follow README.md ("The world the reference model simulates"): community
floods in the years of flood_years.csv, an elevation grant with probability 0.5 a
year, each active household flooded with probability ``flood_threshold`` (x 0.2 when
elevated), a memory of the last five yearly flood tags, the reference utilities for the
offline proposer, insurance for one year, irreversible elevation, absorbing relocation,
and the two trust updates. Every random draw comes from ``world.rng`` (seeded by the
experiment's seed, the step and a key), so a run is reproducible.
"""

from __future__ import annotations

from typing import Any

FLOOD_TAGS = ("flood", "flooded")


def setup(world: Any, agents: list[Any]) -> None:
    """Flood years from the table; each agent starts with no flood history."""
    world.state["flood_years"] = sorted(
        {int(row["Flood_Years"]) for row in world.tables["flood_years"]}
    )
    for agent in agents:
        agent.state["flooded"] = False
        agent.state["flood_history"] = []


def _severity(tags: list[str], decay: float) -> float:
    """Flood tags summed, most recent first, weighted 1, decay, decay^2, ..."""
    return sum(decay**age for age, tag in enumerate(reversed(tags)) if tag in FLOOD_TAGS)


def begin_step(world: Any, agents: list[Any]) -> None:
    """This year's flood, grant and, for each active agent, whether it was flooded."""
    params = world.params
    flood = world.step in world.state["flood_years"]
    grant = world.rng("grant").random() < params["grant_probability"]
    active = [a for a in agents if a.active]
    share_elevated = sum(1 for a in active if a.state["elevated"]) / len(active) if active else 0.0
    share_relocated = (
        sum(1 for a in agents if a.state["relocated"]) / len(agents) if agents else 0.0
    )
    world.state.update(flood=flood, grant=grant)
    for agent in active:
        chance = agent.state["flood_threshold"]
        if agent.state["elevated"]:
            chance *= params["elevated_flood_factor"]
        flooded = flood and world.rng("flooded", agent.id).random() < chance
        agent.state["flooded"] = flooded
        agent.observation = {
            "flood": flood,
            "flooded": flooded,
            "grant": grant,
            "memory_severity": _severity(agent.state["flood_history"], params["memory_decay"]),
            "share_elevated": share_elevated,
            "share_relocated": share_relocated,
        }


def utilities(world: Any, agent: Any) -> dict[str, float]:
    """The reference model's utilities (no PMT terms)."""
    o = agent.observation
    flood, flooded, mem = float(o["flood"]), float(o["flooded"]), o["memory_severity"]
    trust_ins = agent.state["trust_in_insurance"]
    trust_nb = agent.state["trust_in_neighbors"]
    found = {
        "do_nothing": 0.6 - 0.6 * flood - 0.8 * flooded - 0.20 * mem,
        "buy_insurance": 0.3 + 0.5 * flood + 0.8 * flooded + 0.4 * trust_ins + 0.35 * mem,
        "relocate": -1.5
        + 0.8 * flood
        + 1.2 * flooded
        + 0.2 * trust_nb * o["share_relocated"]
        - 2.0
        + 0.20 * mem,
    }
    if not agent.state["elevated"]:
        found["elevate_house"] = (
            0.1
            + 0.8 * flood
            + 1.2 * flooded
            + 0.8 * float(o["grant"])
            + 0.2 * trust_nb * o["share_elevated"]
            - 1.0
            + 0.35 * mem
        )
    return found


def _label(score: float) -> str:
    for bound, label in ((0.2, "VL"), (0.4, "L"), (0.6, "M"), (0.8, "H")):
        if score < bound:
            return label
    return "VH"


def appraisals(world: Any, agent: Any) -> dict[str, str]:
    """Threat and coping labels for the offline proposer's answer: threat from this
    year's flood and the flood memory, coping from trust and the grant."""
    o = agent.observation
    threat = (
        0.9 if o["flooded"] else 0.7 if o["flood"] else min(0.59, 0.15 + 0.2 * o["memory_severity"])
    )
    coping = (agent.state["trust_in_insurance"] + agent.state["trust_in_neighbors"]) / 2 + 0.2 * o[
        "grant"
    ]
    return {"TP_LABEL": _label(threat), "CP_LABEL": _label(coping)}


def _trust(value: float) -> str:
    if value >= 0.7:
        return "strongly trust"
    if value >= 0.4:
        return "moderately trust"
    return "have little trust in"


def prompt_fields(world: Any, agent: Any) -> dict[str, str]:
    """The template's domain placeholders."""
    o = agent.observation
    event = (
        "This year a flood hit the community and your house was flooded."
        if o.get("flooded")
        else "This year a flood hit the community; your house was not flooded."
        if o.get("flood")
        else "There was no flood this year."
    )
    grant = " An elevation grant is available this year." if o.get("grant") else ""
    return {
        "narrative_persona": f"You are a homeowner in a flood-prone neighborhood. {event}{grant}",
        "elevation_status_text": "Your house is already elevated."
        if agent.state["elevated"]
        else "Your house is not elevated.",
        "insurance_status": "have" if agent.state["has_insurance"] else "do not have",
        "trust_insurance_text": _trust(agent.state["trust_in_insurance"]),
        "trust_neighbors_text": _trust(agent.state["trust_in_neighbors"]),
    }


def buy_insurance(state: dict[str, Any], observation: dict[str, Any]) -> None:
    """Insured for this year."""
    state["has_insurance"] = True


def elevate(state: dict[str, Any], observation: dict[str, Any]) -> None:
    """Elevation is irreversible."""
    state["elevated"] = True


def relocate(state: dict[str, Any], observation: dict[str, Any]) -> None:
    """Relocation is absorbing: the agent never decides again."""
    state["relocated"] = True


def noop(state: dict[str, Any], observation: dict[str, Any]) -> None:
    """Doing nothing changes nothing (the insurance lapses in the world's update)."""


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 6)


def end_step(world: Any, agents: list[Any], executed: dict[str, str | None]) -> None:
    """Trust updates, the year's memory, and insurance lapsing unless bought this year."""
    share = sum(1 for a in agents if a.state["elevated"] or a.state["relocated"]) / len(agents)
    years = world.params["flood_memory_years"]
    for agent in agents:
        if agent.id not in executed:
            continue
        state, o = agent.state, agent.observation
        insured, flooded = state["has_insurance"], o["flooded"]
        if insured:
            change = -0.10 if flooded else 0.02
        else:
            change = 0.05 if flooded else -0.02
        state["trust_in_insurance"] = _clamp(state["trust_in_insurance"] + change)
        if share > 0.30:
            change = 0.04
        elif flooded and share < 0.10:
            change = -0.05
        else:
            change = -0.01
        state["trust_in_neighbors"] = _clamp(state["trust_in_neighbors"] + change)
        tag = "flooded" if flooded else "flood" if o["flood"] else "no_flood"
        state["flood_history"] = [*state["flood_history"], tag][-years:]
        if o["flood"]:
            what = "our house was flooded" if flooded else "a flood hit the neighborhood"
            state["memory"] = [*state["memory"], f"Year {world.step}: {what}"]
        if executed[agent.id] != "buy_insurance":
            state["has_insurance"] = False
