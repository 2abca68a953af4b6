"""Admin mixins that write the staff audit log, and its export.

Two kinds of staff action are recorded through `chat.staff_audit.record`:

- *Reading* someone's conversation: opening a run, session, message or attempt page
  (`ViewAuditedAdmin`), listing or searching those, comparing attempts, exporting runs.
- *Changing* what every run depends on: tool servers, team lessons, documents
  (`ChangeAuditedAdmin`). Django's own admin log hooks (`log_addition`, `log_change`,
  `log_deletions`) are the one place every add, edit and delete passes, so the mixin
  records there; the entry names the changed fields, never their values (a tool server's
  secrets are among them).

Issue 15's budgets (or any new configuration model) join the log by mixing
`ChangeAuditedAdmin` into their ModelAdmin and setting `audit_object_type = "budget"`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import timezone

from chat import staff_audit
from chat.audit import spreadsheet_cell
from chat.models import StaffAuditEntry

# Query parameters of a changelist that are not filters (paging, ordering, popups).
NON_FILTER_PARAMS = {"p", "o", "_changelist_filters", "_popup", "_to_field", "format"}


def filters_of(request: HttpRequest) -> dict[str, str]:
    """The changelist filters and search a request carries, as one flat dict for the log."""
    params = request.GET
    if "_changelist_filters" in params:  # a change page remembers the list it came from
        from django.http import QueryDict

        params = QueryDict(params["_changelist_filters"])
    return {key: params.get(key, "") for key in sorted(params) if key not in NON_FILTER_PARAMS}


def object_type(model_admin: Any) -> str:
    """What the log calls an admin's objects: its `audit_object_type`, else the model's name."""
    return model_admin.audit_object_type or str(model_admin.opts.verbose_name)


class ViewAuditedAdmin:
    """Records who opened which object's page, and who searched a list by its content: a
    conversation read by staff is an access, whichever page shows it (a run, one of its
    events or tool results, a message, a document, a memory)."""

    audit_object_type = ""
    # What a search of the list is called in the log ("Searched runs for …").
    audit_list_name = ""

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        response = super().change_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        if request.method == "GET" and response.status_code == 200:
            kind = object_type(self)
            staff_audit.record(
                request, StaffAuditEntry.Action.VIEW, kind, object_id, f"Viewed {kind} {object_id}"
            )
        return response

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # A list shows each row's opening words (a question, a tool's arguments), page after
        # page, filtered to one person if staff like: browsing it is reading too.
        response = super().changelist_view(request, extra_context)  # type: ignore[misc]
        if request.method == "GET" and response.status_code == 200:
            listed = self.audit_list_name or str(self.opts.verbose_name_plural)  # type: ignore[attr-defined]
            search = request.GET.get("q", "").strip()
            page = request.GET.get("p", "")
            summary = f"Searched {listed} for {search!r}" if search else f"Listed {listed}"
            staff_audit.record(
                request,
                StaffAuditEntry.Action.VIEW,
                f"{object_type(self)} list",
                "",
                summary + (f", page {page}" if page.isdigit() and page != "1" else ""),
                filters=filters_of(request),
            )
        return response


class ChangeAuditedAdmin:
    """Records every add, change and delete made through this admin, with the field names
    (and the new values of `audit_value_fields`, which must never include a secret)."""

    audit_object_type = ""
    audit_value_fields: tuple[str, ...] = ()

    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> Any:
        staff_audit.record(
            request,
            StaffAuditEntry.Action.ADD,
            object_type(self),
            obj.pk,
            f"Added {object_type(self)} {obj}",
        )
        return super().log_addition(request, obj, message)  # type: ignore[misc]

    def audit_changed_fields(self, form: Any) -> list[str]:
        """The names of the fields whose value `form` changed. The admin's own message names
        fields by their labels (and counts an unchanged JSON field as changed)."""
        return sorted(
            f
            for f in form.changed_data
            if f not in form.initial or form.initial[f] != form.cleaned_data.get(f)
        )

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        request._audit_changed_fields = self.audit_changed_fields(form)  # type: ignore[attr-defined]
        return super().construct_change_message(request, form, formsets, add)  # type: ignore[misc]

    def log_change(self, request: HttpRequest, obj: Model, message: Any) -> Any:
        fields = getattr(request, "_audit_changed_fields", [])
        if not fields:  # saved unchanged: nothing was done to it
            return super().log_change(request, obj, message)  # type: ignore[misc]
        staff_audit.record(
            request,
            StaffAuditEntry.Action.CHANGE,
            object_type(self),
            obj.pk,
            f"Changed {object_type(self)} {obj}: {', '.join(fields)}",
            changed_fields=fields,
            new_values={f: _plain(getattr(obj, f, None)) for f in fields if f in self.audit_value_fields},
        )
        return super().log_change(request, obj, message)  # type: ignore[misc]

    def log_deletions(self, request: HttpRequest, queryset: Iterable[Model]) -> Any:
        for obj in queryset:
            staff_audit.record(
                request,
                StaffAuditEntry.Action.DELETE,
                object_type(self),
                obj.pk,
                f"Deleted {object_type(self)} {obj}",
            )
        return super().log_deletions(request, queryset)  # type: ignore[misc]


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else str(value)


AUDIT_COLUMNS = [
    "created_at",
    "actor_name",
    "action",
    "object_type",
    "object_id",
    "summary",
    "details",
    "ip_address",
]


def _entry_row(entry: StaffAuditEntry) -> dict[str, Any]:
    return {
        "created_at": entry.created_at.isoformat(),
        "actor_name": entry.actor_name,
        "action": entry.action,
        "object_type": entry.object_type,
        "object_id": entry.object_id,
        "summary": entry.summary,
        "details": entry.details,
        "ip_address": entry.ip_address,
    }


class _Echo:
    """A file-like object csv.writer writes to, handing each line back for streaming."""

    def write(self, value: str) -> str:
        return value


def audit_entries_csv(entries: QuerySet[StaffAuditEntry]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(AUDIT_COLUMNS)
    for entry in entries.iterator(chunk_size=2000):
        row = _entry_row(entry)
        row["details"] = json.dumps(row["details"], ensure_ascii=False, sort_keys=True)
        yield writer.writerow([spreadsheet_cell(row[c]) for c in AUDIT_COLUMNS])


def audit_entries_jsonl(entries: QuerySet[StaffAuditEntry]) -> Iterator[str]:
    for entry in entries.iterator(chunk_size=2000):
        yield json.dumps(_entry_row(entry), ensure_ascii=False) + "\n"


def export_download(
    request: HttpRequest,
    *,
    object_type: str,
    noun: str,
    count: int,
    fmt: str,
    csv_rows: Iterable[str],
    json_lines: Iterable[str],
    filename: str,
) -> StreamingHttpResponse:
    """Record that staff exported `count` `noun` (with the list's filters), then stream them as
    CSV or JSON Lines (both streams are lazy: only the one asked for is read)."""
    staff_audit.record(
        request,
        StaffAuditEntry.Action.EXPORT,
        object_type,
        "",
        f"Exported {count} {noun} as {fmt.upper()}",
        count=count,
        format=fmt,
        filters=filters_of(request),
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    if fmt == "csv":
        response = StreamingHttpResponse(csv_rows, content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(json_lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{filename}-{stamp}.{fmt}"'
    return response


def audit_log_download(
    request: HttpRequest, entries: QuerySet[StaffAuditEntry], fmt: str
) -> StreamingHttpResponse:
    """Stream the entries as CSV or JSON Lines, and record that the log itself was exported."""
    entries = entries.order_by("created_at", "id")
    return export_download(
        request,
        object_type="staff audit log",
        noun="staff audit entries",
        count=entries.count(),
        fmt=fmt,
        csv_rows=audit_entries_csv(entries),
        json_lines=audit_entries_jsonl(entries),
        filename="nexus-staff-audit",
    )


@admin.action(description="Export selected entries as CSV")
def export_audit_csv(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[StaffAuditEntry]
) -> StreamingHttpResponse:
    return audit_log_download(request, queryset, "csv")


@admin.action(description="Export selected entries as JSON Lines")
def export_audit_jsonl(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[StaffAuditEntry]
) -> StreamingHttpResponse:
    return audit_log_download(request, queryset, "jsonl")


def changelist_queryset(modeladmin: admin.ModelAdmin, request: HttpRequest) -> QuerySet[Any]:
    """What the changelist shows for this request's filters, search and date range, unpaged:
    an export of "everything matching" uses exactly the filters the list applies."""
    from copy import copy

    listing = copy(request)
    listing.GET = request.GET.copy()
    for param in NON_FILTER_PARAMS - {"o"}:
        listing.GET.pop(param, None)
    try:
        rows = modeladmin.get_changelist_instance(listing).get_queryset(listing)
        rows.exists()  # a malformed value (a day "x") raises only when the query runs
    except (IncorrectLookupParameters, ValidationError, ValueError, OverflowError) as error:
        raise BadFilters(f"These filters are not valid: {error}") from None
    return rows


class BadFilters(SuspiciousOperation):
    """A hand-edited export URL whose filters the list could not apply: a 400, not a 500."""
