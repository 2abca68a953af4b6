"""Accounts in the admin: only superusers grant rights or touch a superuser's account.

Django lets anyone with "change user" edit every field of every account: make themselves a
superuser, give themselves any permission, or set a superuser's password. Nexus's trust model
rests on superusers (they decide which programs and URLs tool servers use), so granting
rights stays theirs; staff who manage accounts still add people and edit their details, and
each add, edit (with the fields changed) and delete is in the staff audit log.

An account that holds rights (staff status, permissions, groups) is as good as those rights:
setting its password or deactivating it would hand them to the editor. So only superusers
change such accounts; staff who manage accounts manage people without rights, and every
password they set is recorded in the staff audit log.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.contrib.auth.models import Group
from django.http import HttpRequest

from chat.admin_audit import ChangeAuditedAdmin

RIGHTS = ["is_superuser", "is_staff", "groups", "user_permissions"]
# When someone signed in and joined is evidence for an audit: nobody rewrites it by hand.
FORENSICS = ["last_login", "date_joined"]

admin.site.unregister(get_user_model())
admin.site.unregister(Group)


@admin.register(get_user_model())
class AccountAdmin(ChangeAuditedAdmin, UserAdmin):
    audit_object_type = "account"
    # The details an edit sets, recorded with their new values. A password is never one of
    # them: set on its own page, it is recorded as a change of "password", by name only.
    audit_value_fields = (
        "username",
        "first_name",
        "last_name",
        "email",
        "is_active",
        "is_staff",
        "is_superuser",
    )

    def audit_changed_fields(self, form: Any) -> list[str]:
        if isinstance(form, AdminPasswordChangeForm):
            # Turning password sign-in off changes no field Django counts (its form looks for
            # "set_usable_password"): a valid form on this page changed the password either way.
            return ["password"]
        return super().audit_changed_fields(form)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = [*super().get_readonly_fields(request, obj), *FORENSICS]
        return fields if request.user.is_superuser else [*fields, *RIGHTS]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and holds_rights(obj) and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and holds_rights(obj) and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)


def holds_rights(user: Any) -> bool:
    """Whether the account can do more than chat: superuser, staff, or any permission or group."""
    return bool(user.is_superuser or user.is_staff or user.user_permissions.exists() or user.groups.exists())


@admin.register(Group)
class RightsGroupAdmin(GroupAdmin):
    """A group is a bundle of rights: only superusers make or change one."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser
