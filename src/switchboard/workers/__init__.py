"""Background workers (call dispatcher, webhook sender, sweepers), in-process or
`switchboard worker`."""

from __future__ import annotations

from switchboard.identity.federation.tasks import purger as federation_purger
from switchboard.identity.issuance.tasks import purger as issuance_purger
from switchboard.identity.signin.tasks import purger as signin_purger
from switchboard.identity.wallet.tasks import purger as wallet_purger
from switchboard.platform.calls.tasks import dispatcher_worker as call_dispatcher
from switchboard.platform.emails.tasks import email_sender
from switchboard.platform.transcripts.tasks import sweeper as transcript_sweeper
from switchboard.platform.webhooks.tasks import sender as webhook_sender
from switchboard.runtime import Worker
from switchboard.web.tasks import purger as web_session_purger


def all_workers() -> list[Worker]:
    """Every background worker of the product, in start order."""
    workers: list[Worker] = [
        call_dispatcher, webhook_sender, transcript_sweeper, email_sender, signin_purger,
        federation_purger, wallet_purger, issuance_purger, web_session_purger,
    ]  # fmt: skip
    return workers
