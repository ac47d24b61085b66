"""MCP servers as review tools: their configuration, the bridge (the only async code), results as
text.
"""
