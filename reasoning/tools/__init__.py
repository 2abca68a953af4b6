"""Tools: the registry, in-process tools and the MCP client side."""
