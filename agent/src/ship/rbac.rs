//! The API permissions the agent needs.
