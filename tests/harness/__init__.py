"""The one support package of the tests: real registries and peer binaries started on 127.0.0.1
(servers, peers, fixtures), and the builders test modules share, one module per subject
(installs, installworlds, cartridges, reader_edits, btree, levels, releases, release_state,
workflows, attestations, exchanges, catalogs, checkfacts, authregistry, primitives). A test module
imports helpers from here, never from another test module (tests/walks/test_test_layout.py)."""
