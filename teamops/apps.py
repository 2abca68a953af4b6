from django.apps import AppConfig


class TeamopsConfig(AppConfig):
    """Running Nexus for a team: budgets, usage, sharing (issue 15)."""

    name = "teamops"
    verbose_name = "Team operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from teamops.aggregates import register_sqlite_functions

        connection_created.connect(register_sqlite_functions, dispatch_uid="teamops-sqlite-functions")
