"""Quality layers: critic, meta-agent, confidence scorer, reflection."""
