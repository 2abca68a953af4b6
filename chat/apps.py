from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Nexus chat and audit trail"
    default_auto_field = "django.db.models.BigAutoField"
