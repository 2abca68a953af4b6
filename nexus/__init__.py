"""The Django project: settings from the environment, URLs, ASGI routing, the Celery app."""

from nexus.celery import app as celery_app

__all__ = ["celery_app"]
