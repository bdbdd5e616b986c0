"""The refund example's tools: a small in-memory order book, no network.

The python executor imports this module from the skill's folder
(``callable: "refund_tools:process_refund"``).
"""

from __future__ import annotations

from typing import Any

ORDERS: dict[str, dict[str, Any]] = {
    "ORD-12345": {"customer_id": "CUST-1", "total": 900.0, "status": "delivered"},
    "ORD-55555": {"customer_id": "CUST-2", "total": 150.0, "status": "delivered"},
    "ORD-77777": {"customer_id": "CUST-3", "total": 60.0, "status": "in_transit"},
}


def verify_identity(order_id: str) -> dict[str, Any]:
    """The order's owner, if the order exists."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"verified": False, "reason": f"no order {order_id}"}
    return {"verified": True, "customer_id": order["customer_id"]}


def check_eligibility(order_id: str, amount: float) -> dict[str, Any]:
    """Whether the order can be refunded for ``amount``."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"eligible": False, "order_total": 0.0, "reason": "unknown order"}
    if amount > order["total"]:
        return {
            "eligible": False,
            "order_total": order["total"],
            "reason": "amount exceeds the order total",
        }
    return {"eligible": True, "order_total": order["total"], "reason": "within policy"}


def process_refund(order_id: str, amount: float, *, idempotency_key: str = "") -> dict[str, Any]:
    """Issue the refund and say what happens next."""
    return {
        "order_id": order_id,
        "status": "refunded",
        "refund_id": f"RF-{order_id[4:]}-{int(amount * 100)}",
        "next_steps": f"{amount:.2f} will be back on your card within 5 business days.",
    }
