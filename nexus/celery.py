"""The Celery app. Workers execute reasoning runs in the team deployment."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")

app = Celery("nexus")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Sends the queued runs' jobs again when a worker's broker connection comes back (chat.tasks).
app.steps["consumer"].add("chat.tasks:BrokerBack")
