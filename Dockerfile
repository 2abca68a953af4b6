FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NEXUS_VAR_DIR=/var/lib/nexus
WORKDIR /app
COPY pyproject.toml README.md ./
COPY nexus nexus
COPY reasoning reasoning
COPY chat chat
RUN pip install --no-cache-dir .
COPY . .
RUN mkdir -p /var/lib/nexus && python manage.py collectstatic --noinput -v 0
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "nexus.asgi:application"]
