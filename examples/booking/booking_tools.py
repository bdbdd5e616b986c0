"""The booking example's tools: reservations in memory, departures relative to now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

RESERVATIONS: dict[str, dict[str, Any]] = {
    "BK-1001": {"cabin": "economy", "fare": "basic", "days_ahead": 10, "price": 240.0},
    "BK-2002": {"cabin": "business", "fare": "flex", "days_ahead": 30, "price": 1900.0},
    "BK-3003": {"cabin": "economy", "fare": "flex", "days_ahead": 0.5, "price": 310.0},
}
CANCELLED: list[str] = []


def get_reservation(reservation_id: str) -> dict[str, Any]:
    """The reservation, with its departure as an ISO 8601 time."""
    found = RESERVATIONS.get(reservation_id)
    if found is None:
        return {"reservation_id": reservation_id, "status": "unknown"}
    departure = datetime.now(UTC) + timedelta(days=found["days_ahead"])
    return {
        "reservation_id": reservation_id,
        "cabin": found["cabin"],
        "fare": found["fare"],
        "departure": departure.isoformat(timespec="seconds"),
        "price": found["price"],
    }


def cancel_reservation(reservation_id: str) -> dict[str, Any]:
    """Cancel it: a flex fare is refunded in full."""
    found = RESERVATIONS[reservation_id]
    CANCELLED.append(reservation_id)
    refund = found["price"] if found["fare"] == "flex" else 0.0
    return {"reservation_id": reservation_id, "status": "cancelled", "refund": refund}
