//! Test support: the real control plane harness and helpers for end-to-end tests.
