"""The toolkit's "beta" namespace, where framework containers find their
helpers."""
