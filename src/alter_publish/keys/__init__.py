"""Keys: the handle key store, zone keys, lifecycle, rollover and the key commands."""
