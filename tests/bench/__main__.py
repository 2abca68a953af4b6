"""`make bench`: every benchmark, printed as ratios measured side by side in one run."""

import asyncio
import sys

from tests.bench import adaptivity, engine, web


def main() -> int:
    print("\n".join(asyncio.run(engine.main())), flush=True)
    print("\n".join(asyncio.run(adaptivity.main())), flush=True)
    print("\n".join(web.main()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
