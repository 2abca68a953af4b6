from django.urls import path

import chat.converters  # noqa: F401  (registers the "id" converter)
from teamops import share_views, views

app_name = "teamops"

urlpatterns = [
    path("usage/", views.dashboard, name="usage"),
    path("usage/mine/", views.my_usage, name="my-usage"),
    path("usage/quality/", views.quality_stats, name="quality"),
    path("sessions/<id:session_id>/share/", share_views.link_create, name="share-create"),
    path("sessions/<id:session_id>/share/<id:link_id>/revoke/", share_views.link_revoke, name="share-revoke"),
    path("shared/<str:token>/", share_views.shared, name="shared"),
]
