//! macOS host facts: thin shell-outs plus pure parsers of their exact text formats (issue 7).
