from django.urls import path

from teamops import views

app_name = "teamops"

urlpatterns = [
    path("usage/", views.dashboard, name="usage"),
    path("usage/mine/", views.my_usage, name="my-usage"),
]
