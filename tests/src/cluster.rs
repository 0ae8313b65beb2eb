//! Real control plane harness (issue 3).
