"""Each owner's RRSIG window in one signing, from a table of one window per slot (see
docs/dnssec.md, 'Spread renewals')."""

from __future__ import annotations

from alter_publish.definition.model import DNSSECSpec
from alter_publish.definition.state import SignatureWindow, renewal_slot, renewal_slots
from alter_publish.dns.records import Labels, name_wire


class OwnerWindows:
    """:func:`.dnssec.owner_window` for many owners of one signing: each slot's window
    is made once, and an owner's is found by its slot (one hash; at 300,000 owners a
    signing made 300,000 windows otherwise)."""

    def __init__(self, zone: SignatureWindow, spec: DNSSECSpec) -> None:
        validity, refresh = spec.signature_validity, spec.refresh
        start = zone.expiration - validity
        self.slots, _ = renewal_slots(validity - refresh)
        self.windows = tuple(
            SignatureWindow.for_slot(slot, start, validity, refresh) for slot in range(self.slots)
        )

    def __call__(self, owner: Labels) -> SignatureWindow:
        """The window of ``owner``'s RRSIGs."""
        return self.windows[self.slot(owner)]

    def slot(self, owner: Labels) -> int:
        """The slot of ``owner``: its window is ``windows[slot]``."""
        return renewal_slot(name_wire(owner), self.slots)
