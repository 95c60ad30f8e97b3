"""Every table of the product, imported in one place so the metadata is complete."""

from switchboard.auth import models as identity_models
from switchboard.identity.federation import models as federation_models  # noqa: F401
from switchboard.identity.issuance import models as issuance_models  # noqa: F401
from switchboard.identity.wallet import models as wallet_models  # noqa: F401
from switchboard.kit.models import Base
from switchboard.linen import models as linen_models  # noqa: F401
from switchboard.platform.calls import models as call_models  # noqa: F401
from switchboard.platform.emails import models as email_models  # noqa: F401
from switchboard.platform.events import models as event_models
from switchboard.platform.numbers import models as number_models
from switchboard.platform.rooms import models as room_models  # noqa: F401
from switchboard.platform.routing import models as routing_models  # noqa: F401
from switchboard.platform.shares import models as share_models  # noqa: F401
from switchboard.platform.transcripts import models as transcript_models
from switchboard.platform.webhooks import models as webhook_models  # noqa: F401
from switchboard.platform.whitelist import models as whitelist_models  # noqa: F401
from switchboard.relay import models as relay_models  # noqa: F401
from switchboard.tenants import models as tenant_models
from switchboard.web import models as web_models  # noqa: F401

__all__ = [
    "Base",
    "event_models",
    "identity_models",
    "number_models",
    "tenant_models",
    "transcript_models",
]
