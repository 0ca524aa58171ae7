"""Publishing: push (RFC 2136 + TSIG) and export."""
