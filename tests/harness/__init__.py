"""Test harness: real registries and peer binaries started on 127.0.0.1 by the tests."""
