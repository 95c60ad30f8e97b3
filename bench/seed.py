"""Rows the benches write straight into the calls table (seeding 100,000 calls through the API
would take longer than the measurement)."""

from __future__ import annotations

import datetime as dt

from switchboard.runtime import Runtime


class CallRows:
    """Scheduled outbound calls of one tenant, as ``insert(Call)`` rows; secrets sealed once."""

    def __init__(self, runtime: Runtime, tenant_id: int) -> None:
        self.tenant_id = tenant_id
        self.sealed_key = runtime.box.seal("bench-ai-key")
        self.sealed_prompt = runtime.box.seal("Say hi.")

    def row(self, call_id: str, when: dt.datetime, now: dt.datetime) -> dict[str, object]:
        return {
            "call_id": call_id, "tenant_id": self.tenant_id, "requested_by": "bench",
            "phone": "+14155550100", "display_name": "Bench", "email": "b@example.com",
            "voice": "Aoede", "language": "en-US", "model": "m",
            "system_prompt_sealed": self.sealed_prompt, "api_key_sealed": self.sealed_key,
            "max_seconds": 300, "retry_delay_minutes": 5, "attempt": 1, "retries_left": 0,
            "trunk_ids": ["default"], "trunk_id": "default", "status": "scheduled",
            "created_at": now, "scheduled_for": when, "due_at": when, "ended_reason": "",
            "outcome": "", "duration_sec": 0, "transcript_path": "", "error_detail": "",
            "cancelled_by": "", "attempt_open": False, "dial_failures": 0, "bridge_reply": "",
        }  # fmt: skip
