"""The alter1 rules: handles and URIs, envelope text, the IdentityLog."""
