from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from nexus import health

# Browsers ask for /favicon.ico on pages that name no icon (the admin's): send them the real one.
favicon = login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True))

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("favicon.ico", favicon),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("", include("teamops.urls")),
    path("", include("chat.urls")),
]
handler500 = "nexus.errors.server_error"
handler400 = "nexus.errors.bad_request"
