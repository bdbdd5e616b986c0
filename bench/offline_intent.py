"""Accuracy of the offline intent classifier on paraphrases kept apart from the skills.

``python -m bench.offline_intent`` prints one JSON line per example skill and one
summary line. The paraphrases below are not in either skill's ``examples``; messages
labelled ``None`` are out of domain and must be rejected.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from skillwire.engine.prompts import intent_request, intent_system
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_skill

ROOT = Path(__file__).resolve().parent.parent
SKILLS = [
    ROOT / "examples" / "refund_support" / "domain.yaml",
    ROOT / "examples" / "refund_support_pkg",
]

REFUND = "intent_refund"
STATUS = "intent_order_status"
PARAPHRASES: list[tuple[str, str | None]] = [
    ("Can you give me a refund for ORD-12345?", REFUND),
    ("I need my money returned", REFUND),
    ("Please reimburse me for the broken blender", REFUND),
    ("refund order ORD-55555 for $120", REFUND),
    ("I'd like to get refunded, the shoes don't fit", REFUND),
    ("Give me back what I paid", REFUND),
    ("The product was damaged and I want a refund", REFUND),
    ("How do I get a refund on my purchase?", REFUND),
    ("I returned the item, where's my refund? I want it processed", REFUND),
    ("Please process a refund of 750 dollars", REFUND),
    ("I was double charged, refund the extra payment", REFUND),
    ("Money back please, the order was wrong", REFUND),
    ("I want to cancel and be reimbursed", REFUND),
    ("Could you refund my last order?", REFUND),
    ("I demand a full refund", REFUND),
    ("Refund $99.99 to my card", REFUND),
    ("I'm not happy with this purchase, I want my money", REFUND),
    ("Please credit my account back for ORD-77777", REFUND),
    ("I want a partial refund for the missing parts", REFUND),
    ("This arrived defective, can I get my payment back?", REFUND),
    ("Start a refund for me", REFUND),
    ("I'd like a refund of 300 on order ORD-12345", REFUND),
    ("Where's my package?", STATUS),
    ("Track order ORD-12345", STATUS),
    ("Has my order been shipped?", STATUS),
    ("When is my delivery arriving?", STATUS),
    ("What is the status of my order ORD-55555", STATUS),
    ("Is my parcel on its way?", STATUS),
    ("I haven't received my order yet, where is it?", STATUS),
    ("Can you check where my shipment is?", STATUS),
    ("Order status please", STATUS),
    ("How long until my order gets here?", STATUS),
    ("Did my package ship?", STATUS),
    ("Tracking info for ORD-77777", STATUS),
    ("What's happening with my order?", STATUS),
    ("Is ORD-12345 delivered?", STATUS),
    ("When will the package arrive", STATUS),
    ("What's the weather like tomorrow?", None),
    ("Tell me a joke", None),
    ("How do I reset my router password?", None),
    ("Book a table for two at 8pm", None),
    ("What's the capital of Australia?", None),
    ("Translate hello into Spanish", None),
    ("Can you help me write a poem?", None),
    ("Who won the football game last night?", None),
    ("Set an alarm for 7am", None),
    ("Recommend a good movie", None),
    ("What is 17 times 23?", None),
    ("I want to apply for a job at your company", None),
]


async def evaluate(path: Path, model: OfflineModel) -> dict[str, object]:
    """Accuracy of the classifier for one skill, with the misses."""
    skill = load_skill(path)
    system = intent_system(skill)  # built once per skill, as the engine's compiled skill does
    correct = 0
    misses = []
    started = time.perf_counter()
    for text, expected in PARAPHRASES:
        response = await model.complete(intent_request(skill, text, system=system))
        got = json.loads(response.text)["intent"]
        if got == expected:
            correct += 1
        else:
            misses.append({"message": text, "expected": expected, "got": got})
    elapsed = time.perf_counter() - started
    return {
        "bench": "offline_intent",
        "skill": skill.id,
        "messages": len(PARAPHRASES),
        "accuracy": round(correct / len(PARAPHRASES), 3),
        "ms_per_message": round(elapsed * 1000 / len(PARAPHRASES), 3),
        "misses": misses,
    }


async def main() -> None:
    """Print one line per skill and a summary."""
    model = OfflineModel()
    results = [await evaluate(path, model) for path in SKILLS]
    for result in results:
        print(json.dumps(result))
    total = sum(int(r["messages"]) for r in results)  # type: ignore[call-overload]
    right = sum(round(float(r["accuracy"]) * int(r["messages"])) for r in results)  # type: ignore[arg-type, call-overload]
    print(
        json.dumps(
            {
                "bench": "offline_intent",
                "skills": len(results),
                "messages": total,
                "accuracy": round(right / total, 3),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
