"""Every table of the product, imported in one place so the metadata is complete."""

from switchboard.identity import models as identity_models
from switchboard.kit.db import Base
from switchboard.platform.events import models as event_models
from switchboard.tenants import models as tenant_models

__all__ = ["Base", "event_models", "identity_models", "tenant_models"]
