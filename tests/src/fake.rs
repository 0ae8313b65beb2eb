//! fake-tart homes and knobs for tests.
