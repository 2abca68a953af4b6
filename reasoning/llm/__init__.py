"""LLM providers behind one async protocol."""
