"""Accounts in the admin: only superusers grant rights or touch a superuser's account.

Django lets anyone with "change user" edit every field of every account: make themselves a
superuser, give themselves any permission, or set a superuser's password. Nexus's trust model
rests on superusers (they decide which programs and URLs tool servers use), so granting
rights stays theirs; staff who manage accounts still add people and edit their details.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest

RIGHTS = ["is_superuser", "groups", "user_permissions"]

admin.site.unregister(get_user_model())
admin.site.unregister(Group)


@admin.register(get_user_model())
class AccountAdmin(UserAdmin):
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else [*fields, *RIGHTS]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Group)
class RightsGroupAdmin(GroupAdmin):
    """A group is a bundle of rights: only superusers make or change one."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser
