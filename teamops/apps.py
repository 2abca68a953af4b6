from django.apps import AppConfig


class TeamopsConfig(AppConfig):
    """Running Nexus for a team: budgets, usage, sharing (issue 15)."""

    name = "teamops"
    verbose_name = "Team operations"
    default_auto_field = "django.db.models.BigAutoField"
