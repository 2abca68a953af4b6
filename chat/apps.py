from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Nexus chat and audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import signin  # noqa: F401 - connects its sign-in signal receiver
