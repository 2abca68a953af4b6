from django.urls import path

import chat.converters  # noqa: F401  (registers the "id" converter)
from chat import views, views_memory, views_tools

app_name = "chat"

urlpatterns = [
    path("", views.home, name="home"),
    path("sessions/new/", views.session_new, name="session-new"),
    path("sessions/older/", views.session_list, name="session-list"),
    path("sessions/<id:session_id>/", views.session_detail, name="session"),
    path("sessions/<id:session_id>/rename/", views.session_rename, name="session-rename"),
    path("sessions/<id:session_id>/delete/", views.session_delete, name="session-delete"),
    path("sessions/<id:session_id>/messages/", views.message_create, name="message-create"),
    path("sessions/<id:session_id>/runs/<id:run_id>/retry/", views.run_retry, name="run-retry"),
    path("sessions/<id:session_id>/runs/<id:run_id>/stop/", views.run_stop, name="run-stop"),
    path("sessions/<id:session_id>/runs/<id:run_id>/resend/", views.run_resend, name="run-resend"),
    path("sessions/<id:session_id>/runs/<id:run_id>/feedback/", views.run_feedback, name="run-feedback"),
    path("sessions/<id:session_id>/export.md", views.session_export, name="session-export"),
    path("search/", views.search, name="search"),
    path("preferences/", views.preference_update, name="preferences"),
    path("documents/", views.document_list, name="documents"),
    path("documents/upload/", views.document_upload, name="document-upload"),
    path("documents/<id:document_id>/delete/", views.document_delete, name="document-delete"),
    path("complete/", views.completions, name="completions"),
    path(
        "runs/<id:run_id>/events/<id:sequence>/parts/<id:index>/",
        views_tools.tool_part,
        name="tool-part",
    ),
    path("approvals/<id:approval_id>/", views_tools.approval_decide, name="approval-decide"),
    path("elicitations/<id:elicitation_id>/", views_tools.elicitation_reply, name="elicitation-reply"),
    path("memory/", views_memory.memory_list, name="memory"),
    path("memory/<id:memory_id>/delete/", views_memory.memory_delete, name="memory-delete"),
    path("memory/lessons/delete/", views_memory.memory_lesson_delete, name="memory-lesson-delete"),
    path("memory/forget/", views_memory.memory_forget, name="memory-forget"),
    path("sessions/<id:session_id>/mode/", views_memory.session_mode, name="session-mode"),
]
