//! MemTart placeholder
