"""A tool server that prints its secret to stderr and dies: what a careless server does."""

import os
import sys

sys.stderr.write(
    f"starting with LEAKY_TOKEN={os.environ.get('LEAKY_TOKEN')} and Bearer {os.environ.get('LEAKY_TOKEN')}\n"
)
sys.stderr.write(f"fatal: cannot authenticate with {os.environ.get('LEAKY_TOKEN')}\n")
sys.stderr.flush()
sys.exit(3)
