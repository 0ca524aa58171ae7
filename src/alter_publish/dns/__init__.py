"""DNS: wire records, zone signing and NSEC3, validation, answer engines and the server."""
