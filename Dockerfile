# Two stages. The builder has gcc, so `pip wheel` compiles the rules' move generator with
# mypyc (setup.py, docs/wire.md "The compiled move generator"); the runtime image has no
# compiler and installs that wheel. Built without gcc (a plain
# `pip install .` on python:3.11-slim), the same package runs the pure-Python generator.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY rating_plugin ./rating_plugin
COPY server ./server
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --system --no-create-home table42
USER table42
WORKDIR /app
EXPOSE 8080
# REDIS_URL is set by docker-compose; without it the server starts an embedded Redis.
# SIGTERM (docker stop) drains the node: see docs/operations.md, "Deploying a new version".
STOPSIGNAL SIGTERM
CMD ["python", "-m", "server", "--host", "0.0.0.0", "--port", "8080"]
