//! The agent's own size-rotated log file.
