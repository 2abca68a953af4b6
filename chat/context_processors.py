from django.conf import settings
from django.http import HttpRequest


def nexus(request: HttpRequest) -> dict[str, object]:
    """What every page shows in its footer: which model answers."""
    config = settings.NEXUS_REASONING
    return {
        "nexus_provider": settings.NEXUS_LLM_PROVIDER,
        "nexus_model": config.model,
        "nexus_analysis_model": config.model_for("analysis"),
        "nexus_max_message_chars": settings.NEXUS_MAX_MESSAGE_CHARS,
        "nexus_theme": lambda: _theme(request),
    }


def _theme(request: HttpRequest) -> str:
    """The signed-in person's colour scheme: system (follow the device), light or dark. Read
    once per request (the page asks twice, and the chat view may have read it already)."""
    from chat.presenters import preferences_of

    return preferences_of(request)["theme"]
