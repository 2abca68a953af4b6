"""Keep the garbage collector's full passes short in the long-lived processes.

A daphne or worker process keeps 130,000-190,000 objects from its imports and first requests
(Django, Celery, compiled templates, the model and MCP SDKs) for as long as it lives. Python's
full (oldest-generation) collection walked all of them every few seconds: 50-140 ms measured on
a worker and on daphne, during which every run in the process, its event writer and its pushes
to the pages stood still, so one run in ten or twenty reached its page 0.1 s late. Frozen once
start-up is over, they are left out of every collection; what requests and runs allocate later
is collected as before.

Young collections are made rarer too: at the default (every 700 net allocations) a daphne
serving 100 runs spent about a tenth of its CPU in them, since a run's objects live for seconds
and each pass walks all that are alive; at 20,000 it spent half as much (measured on the
embedded server under the team benchmark's long-question load).
"""

from __future__ import annotations

import gc
from pathlib import Path

# Net allocations between young collections (Python's default is 700); the older generations'
# thresholds are left as they are.
YOUNG_THRESHOLD = 20_000


def freeze_startup_objects() -> None:
    """Collect what start-up left as garbage, then move every surviving object to the
    permanent generation (called once the process has imported what its requests and runs use,
    before it serves any: an object of a request in flight would be kept for good)."""
    from django.conf import settings

    if not settings.NEXUS_GC_FREEZE:
        return
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)


def load_pages() -> None:
    """Import every view and compile every project template now, as the first requests would:
    what they create lives as long as the process, so it is better frozen with the rest."""
    from django.conf import settings
    from django.template.loader import get_template
    from django.urls import get_resolver

    def walk(patterns: list[object]) -> None:
        for pattern in patterns:
            walk(getattr(pattern, "url_patterns", []))

    walk(get_resolver().url_patterns)
    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            get_template(path.relative_to(folder).as_posix())
