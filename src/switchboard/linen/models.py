"""Every table of the linen portal, imported once so the metadata is complete."""

from switchboard.linen.groups.models import GroupMember, PropertyGroup
from switchboard.linen.invoices.models import Invoice, InvoiceLine, InvoicePdf
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries.models import Laundry, LaundryKey, PriceList
from switchboard.linen.properties.models import Property
from switchboard.linen.sheets.models import LinenSheet, SheetLine
from switchboard.linen.vault.models import VaultEntry, VaultReveal

__all__ = [
    "GroupMember",
    "Invoice",
    "InvoiceLine",
    "InvoicePdf",
    "ItemType",
    "Laundry",
    "LaundryKey",
    "LinenSheet",
    "PriceList",
    "Property",
    "PropertyGroup",
    "SheetLine",
    "VaultEntry",
    "VaultReveal",
]
