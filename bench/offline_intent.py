"""Accuracy of the offline intent classifier on messages kept apart from the skills.

``python -m bench.offline_intent`` prints one JSON line per skill and one summary line.
Two rates per skill: ``in_domain_accuracy`` (messages one of the skill's intents serves,
classified as that intent) and ``out_of_domain_rate`` (messages no intent of the skill
serves, rejected). The paraphrases are not in any skill's ``examples``. A message
labelled with an intent the skill does not have is out of domain for that skill: on
spec 000's refund-only example, "Where's my package?" must be rejected.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from skillwire.engine.prompts import intent_data, intent_request, intent_system
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_skill

ROOT = Path(__file__).resolve().parent.parent
SKILLS = [
    ROOT / "examples" / "refund_support" / "domain.yaml",
    ROOT / "examples" / "refund_support_pkg",
    ROOT / "tests" / "fixtures" / "spec_000_domain.yaml",
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
    # Out of domain, sharing words with the skills' examples or descriptions.
    ("I want to order a pizza", None),
    ("How much money do I have in my savings account?", None),
    ("Cancel my gym membership", None),
    ("Where is the nearest train station?", None),
    ("My package of cigarettes is empty, any tips to quit?", None),
    ("Please send me your opening hours", None),
    ("What's the status of the stock market today?", None),
    ("Can you track my fitness goals?", None),
    ("I need help with my tax return", None),
    ("Who is the CEO of the company?", None),
    ("How do I change my email address?", None),
    ("Play some music", None),
    ("What time is it in Tokyo?", None),
    ("Order the list alphabetically", None),
    ("My back hurts, what should I do?", None),
    ("Explain quantum physics simply", None),
    ("asdf qwerty zxcv", None),
    ("Thanks, bye!", None),
    # Out of domain, more everyday requests (with "return", a refund word, once).
    ("How do I tune a guitar?", None),
    ("Help me plan a wedding", None),
    ("What's the best opening move in chess?", None),
    ("Is raw cookie dough safe to eat?", None),
    ("How do volcanoes form?", None),
    ("Write a haiku about autumn", None),
    ("My car makes a strange noise when braking", None),
    ("How do I knit a scarf?", None),
    ("What's the speed of light?", None),
    ("Suggest a name for my cat", None),
    ("Where can I recycle old batteries?", None),
    ("Return this library book for me", None),
]


async def evaluate(path: Path, model: OfflineModel) -> dict[str, object]:
    """Both rates of the classifier for one skill, with the misses."""
    skill = load_skill(path)
    system = intent_system(skill)  # built once per skill, as the engine's compiled skill does
    data = intent_data(skill)
    ids = {i.id for i in skill.intents.supported}
    counts = {"in": 0, "in_right": 0, "out": 0, "out_right": 0}
    misses = []
    started = time.perf_counter()
    for text, label in PARAPHRASES:
        expected = label if label in ids else None
        response = await model.complete(intent_request(skill, text, system=system, data=data))
        got = json.loads(response.text)["intent"]
        side = "in" if expected else "out"
        counts[side] += 1
        if got == expected:
            counts[f"{side}_right"] += 1
        else:
            misses.append({"message": text, "expected": expected, "got": got})
    elapsed = time.perf_counter() - started
    return {
        "bench": "offline_intent",
        "skill": skill.id,
        "in_domain": counts["in"],
        "out_of_domain": counts["out"],
        "in_domain_accuracy": round(counts["in_right"] / max(counts["in"], 1), 3),
        "out_of_domain_rate": round(counts["out_right"] / max(counts["out"], 1), 3),
        "accuracy": round((counts["in_right"] + counts["out_right"]) / len(PARAPHRASES), 3),
        "ms_per_message": round(elapsed * 1000 / len(PARAPHRASES), 3),
        "misses": misses,
        "_right": [counts["in_right"], counts["out_right"]],
    }


async def main() -> None:
    """Print one line per skill and a summary."""
    model = OfflineModel()
    results = [await evaluate(path, model) for path in SKILLS]
    sums = [0, 0, 0, 0]
    for result in results:
        right = result.pop("_right")
        assert isinstance(right, list)
        sums = [
            sums[0] + int(str(result["in_domain"])),
            sums[1] + int(right[0]),
            sums[2] + int(str(result["out_of_domain"])),
            sums[3] + int(right[1]),
        ]
        print(json.dumps(result))
    print(
        json.dumps(
            {
                "bench": "offline_intent",
                "skills": len(results),
                "messages": sums[0] + sums[2],
                "in_domain_accuracy": round(sums[1] / max(sums[0], 1), 3),
                "out_of_domain_rate": round(sums[3] / max(sums[2], 1), 3),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
