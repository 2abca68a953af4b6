"""`make bench`: every benchmark, printed as ratios measured side by side in one run."""

import asyncio
import sys

import tests.env  # noqa: F401  - the same known environment as the tests (offline model, a secrets key)
from tests.bench import adaptivity, audit, engine, memory, modes, team, tool_servers, usage, web


def main() -> int:
    print("\n".join(asyncio.run(engine.main())), flush=True)
    print("\n".join(asyncio.run(adaptivity.main())), flush=True)
    print("\n".join(asyncio.run(modes.main())), flush=True)
    print("\n".join(memory.main()), flush=True)
    print("\n".join(web.main()), flush=True)
    print("\n".join(team.main()), flush=True)
    print("\n".join(audit.main()), flush=True)
    print("\n".join(usage.main()), flush=True)
    print("\n".join(tool_servers.main()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
