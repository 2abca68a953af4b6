from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Nexus chat and audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from chat import signin  # noqa: F401 - connects its sign-in signal receiver
        from chat.fts import ensure_sqlite_fulltext

        post_migrate.connect(ensure_sqlite_fulltext, sender=self, dispatch_uid="nexus-sqlite-fulltext")
