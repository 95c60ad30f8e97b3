"""Inbound and outbound routing tables, their matchers and the dry-run endpoints."""

# Importing the service registers the catchall set-up for every new tenant.
from switchboard.platform.routing import service as service
