"""The built-in tools: one module per tool, each giving its handler."""
