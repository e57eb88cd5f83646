FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY rating_plugin ./rating_plugin
COPY server ./server
RUN pip install --no-cache-dir .
EXPOSE 8080
# REDIS_URL is set by docker-compose; without it the server starts an embedded Redis.
CMD ["python", "-m", "server", "--host", "0.0.0.0", "--port", "8080"]
