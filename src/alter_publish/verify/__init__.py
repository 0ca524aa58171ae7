"""Verification: resolve (spec section 7), pins, the loopback proof, the zone check."""
