FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NEXUS_VAR_DIR=/var/lib/nexus
WORKDIR /app
COPY pyproject.toml README.md ./
COPY nexus nexus
COPY reasoning reasoning
COPY chat chat
COPY teamops teamops
RUN pip install --no-cache-dir .
COPY . .
RUN useradd --system --uid 10001 --home-dir /var/lib/nexus --shell /usr/sbin/nologin nexus \
    && mkdir -p /var/lib/nexus \
    && NEXUS_SECRETS_KEY= python manage.py collectstatic --noinput -v 0 \
    && rm -f /var/lib/nexus/secret_key /var/lib/nexus/secrets_key \
    && chown -R nexus:nexus /var/lib/nexus
# The code stays root's and read-only; the server runs unprivileged and writes only its var dir.
USER nexus
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "nexus.asgi:application"]
