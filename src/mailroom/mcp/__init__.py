"""MCP server: every key-callable API operation as a tool for AI agents (HTTP at /mcp, stdio)."""
